"""Agent runs: their lifecycle on a thread, their persisted events, their artifacts and their streams."""
