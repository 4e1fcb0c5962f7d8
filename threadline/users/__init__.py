"""Dashboard logins (the owner created by `threadline init`)."""
