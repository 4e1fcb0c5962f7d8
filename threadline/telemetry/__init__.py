"""Telemetry: the intake (its own ASGI app and port) and reading logs back."""
