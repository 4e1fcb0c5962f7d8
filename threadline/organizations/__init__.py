"""Organizations: the tenant boundary every query is scoped to."""
