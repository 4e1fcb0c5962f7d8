"""Full-text search over threads and messages: one query language, a backend per SQL dialect."""
