"""MCP servers a tenant registers, and Threadline as their client."""
