"""Messages: the turns of a thread, written by clients or by runs."""
