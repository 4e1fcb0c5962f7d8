"""The agent runtime: a loop of model turns and tool calls that a run executes, producing its events."""
