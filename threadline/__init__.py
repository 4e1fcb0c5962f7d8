"""Threadline: a self-hosted agent platform with built-in telemetry."""

__version__ = "0.1.0"
