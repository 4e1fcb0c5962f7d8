"""What a request *is*: the caller (``Principal``), how a handler reads it, stream slots and the signal names
that invalidate a caller. Below every domain that serves requests, so none of them imports ``keys`` for it."""
