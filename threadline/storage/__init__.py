"""Schema and migrations shared by every domain."""
