"""Cron expressions in a time zone: validation and the next time a schedule is due.

Five fields (minute hour day-of-month month day-of-week) as in Debian's cron (with cronsim's ``L``, ``W``
and ``#`` for the last day, the nearest weekday and the n-th weekday of a month), read by ``cronsim``, which
also follows cron across daylight-saving changes: a time skipped by the spring change runs once right
after it, a time repeated by the autumn change runs once. The usual ``@hourly``/``@daily``/... shorthands
are accepted. Times are computed in the automation's IANA time zone and stored in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

MAX_CRON_CHARS = 200
_SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def check_cron(expression: str) -> str:
    """The expression as given, or ValueError saying what is wrong with it."""
    if len(expression) > MAX_CRON_CHARS:
        raise ValueError(f"at most {MAX_CRON_CHARS} characters")
    if len(_expanded(expression).split()) != 5:  # cronsim would also take a sixth, per-second field
        raise ValueError(
            "not a cron expression: use five fields, minute hour day-of-month month day-of-week, like "
            "'*/15 * * * *', or @hourly, @daily, @weekly, @monthly, @yearly"
        )
    try:
        next(CronSim(_expanded(expression), datetime.now(UTC)))
    except (CronSimError, StopIteration) as error:
        raise ValueError(
            f"not a cron expression ({error or 'never due'}): use five fields, minute hour "
            "day-of-month month day-of-week, like '*/15 * * * *', or @hourly, @daily, @weekly, "
            "@monthly, @yearly"
        ) from None
    return expression


def check_timezone(name: str) -> str:
    try:
        _zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name that is a folder ("Europe")
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name like 'UTC' or 'Europe/Berlin'"
        ) from None
    return name


def next_time(expression: str, timezone: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that the schedule is due, in UTC."""
    local = after.astimezone(_zone(timezone))
    return next(CronSim(_expanded(expression), local)).astimezone(UTC)


def _expanded(expression: str) -> str:
    stripped = expression.strip()
    return _SHORTHANDS.get(stripped.lower(), stripped)


def _zone(name: str) -> ZoneInfo:
    if not name or name.startswith(("/", ".")) or ".." in name:
        raise ValueError(name)  # ZoneInfo would read a path
    return ZoneInfo(name)
