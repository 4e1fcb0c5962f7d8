"""Wall-clock helpers: one place that decides how times are made and written (UTC, ISO 8601, ``Z``)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat(value: datetime) -> str:
    """``2026-11-21T07:30:00.123Z``: millisecond precision, always UTC, always ``Z``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
