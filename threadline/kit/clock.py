"""Wall-clock helpers: one place that decides how times are made and written (UTC, ISO 8601, ``Z``)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat(value: datetime) -> str:
    """``2026-11-21T07:30:00.123Z``: millisecond precision, always UTC, always ``Z``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Clock:
    """The time as the product reads it for every decision (expiries, leases, schedules, cooldowns,
    retention, sessions, the timestamps rows carry): the system's. ``runtime.open_services`` makes one and
    hands it to every part (``Services.clock``), so tests and simulations drive it; nothing else reads the
    wall clock (``tests/test_clock_source.py``), and durations are measured on ``time.monotonic``."""

    def now(self) -> datetime:
        return utcnow()

    def timestamp(self) -> float:
        """``now()`` as POSIX seconds, for the paths every request takes (the rate limiter's reset, a key's
        last use): ``time.time()`` costs 0.08 µs where ``now().timestamp()`` costs 0.7 µs."""
        return time.time()


class ManualClock(Clock):
    """A clock that moves only when told: tests step schedules through hours in microseconds."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("a ManualClock starts at an aware datetime")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def timestamp(self) -> float:
        return self._now.timestamp()

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment.astimezone(UTC)
