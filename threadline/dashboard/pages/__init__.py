"""One module per page (or group of pages): its routes, reached through ``dashboard.app``."""
