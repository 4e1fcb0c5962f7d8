"""Triggers in words, as people scan a list of automations: "weekdays at 08:00, Europe/Berlin" rather
than ``0 8 * * 1-5``, "error logs containing 'timeout'" rather than a filter object.

The common cron shapes are told in words; anything else (steps over days, both a day of the month and a
day of the week, which cron reads as "either") is shown as the expression itself, which is exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from threadline.automations.schedule import _SHORTHANDS

_DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAY_NUMBERS = {name[:3].lower(): i for i, name in enumerate(_DAY_NAMES)}
_MONTH_NUMBERS = {name[:3].lower(): i + 1 for i, name in enumerate(_MONTH_NAMES)}
_STEP = re.compile(r"^(?:\*|0)/(\d+)$")
_RANGE = re.compile(r"^(\w+)-(\w+)$")
_MAX_LISTED_TIMES = 4


def describe_trigger(trigger: Mapping[str, Any], project_name: str | None = None) -> str:
    """A stored trigger (``TriggerIn.stored``) in words; ``project_name`` for a log trigger's project."""
    if trigger["type"] == "schedule":
        return describe_schedule(str(trigger["cron"]), str(trigger["timezone"]))
    return describe_log_filter(
        str(trigger["level"]), trigger.get("contains"), project_name or trigger.get("projectId")
    )


def describe_schedule(cron: str, timezone: str) -> str:
    return f"{describe_cron(cron) or cron}, {timezone}"


def describe_log_filter(level: str, contains: str | None, project: str | None) -> str:
    """Records at ``level`` or above: "error logs" reads right for error (and fatal, the only one above)."""
    words = f"{level} logs" if level in ("error", "fatal") else f"logs at {level} or above"
    if project:
        words += f" of project {project}"
    if contains:
        words += f" containing '{contains}'"
    return words


def describe_cooldown(seconds: int) -> str:
    if seconds == 0:
        return "fires on every match"
    return f"at most once every {_duration(seconds)}"


def describe_cron(expression: str) -> str | None:
    """The expression in words, or None when it is not one of the shapes told in words."""
    fields = _SHORTHANDS.get(expression.strip().lower(), expression).split()
    if len(fields) != 5:
        return None
    minute, hour, day, month, weekday = fields
    days = _days(day, month, weekday)
    if days is None:
        return None
    times = _times_of_day(minute, hour)
    if times is not None:
        return f"{days or 'daily'} at {times}"
    every = _interval(minute, hour)
    if every is None:
        return None
    return f"{every} on {days}" if days else every


def _times_of_day(minute: str, hour: str) -> str | None:
    """ "08:00" or "08:00 and 17:30": fixed times in the day."""
    if not minute.isdigit():
        return None
    hours = hour.split(",")
    if len(hours) > _MAX_LISTED_TIMES or not all(h.isdigit() for h in hours):
        return None
    return _and([f"{int(h):02d}:{int(minute):02d}" for h in hours])


def _interval(minute: str, hour: str) -> str | None:
    """A repetition within the day: every minute, every 15 minutes, every hour at :30, every 2 hours."""
    step = _STEP.match(minute)
    hours_between = _hour_range(hour)
    if minute == "*" or step:
        every = "every minute" if minute == "*" else _every(int(step.group(1)) if step else 1, "minute")
        if hour == "*":
            return every
        return f"{every} {hours_between}" if hours_between else None
    if not minute.isdigit():
        return None
    past = f" at :{int(minute):02d}" if int(minute) else ""
    if hour == "*":
        return f"every hour{past}"
    hour_step = _STEP.match(hour)
    if hour_step:
        return f"{_every(int(hour_step.group(1)), 'hour')}{past}"
    if hours_between:
        return f"every hour{past} {hours_between}"
    return None


def _hour_range(hour: str) -> str | None:
    found = _RANGE.match(hour)
    if not found or not (found.group(1).isdigit() and found.group(2).isdigit()):
        return None
    return f"from {int(found.group(1)):02d}:00 to {int(found.group(2)):02d}:59"


def _days(day: str, month: str, weekday: str) -> str | None:
    """ "" (every day), "weekdays", "Mondays and Fridays", "on the 1st of every month", "on March 3"."""
    if day == "*" and month == "*":
        return "" if weekday == "*" else _weekdays(weekday)
    if weekday != "*":
        return None
    if month == "*":
        if day == "L":
            return "on the last day of every month"
        numbers = day.split(",")
        if all(n.isdigit() and 1 <= int(n) <= 31 for n in numbers):
            return f"on the {_and([_ordinal(int(n)) for n in numbers])} of every month"
        return None
    month_number = _number(month, _MONTH_NUMBERS)
    if month_number is None or not 1 <= month_number <= 12 or not day.isdigit():
        return None
    return f"every year on {_MONTH_NAMES[month_number - 1]} {int(day)}"


def _weekdays(weekday: str) -> str | None:
    found = _RANGE.match(weekday)
    if found:
        first, last = _number(found.group(1), _DAY_NUMBERS), _number(found.group(2), _DAY_NUMBERS)
        if first is None or last is None or not 0 <= first < last <= 7:
            return None
        if last - first >= 6:
            return ""
        if (first, last) == (1, 5):
            return "weekdays"
        if (first, last) == (6, 7):
            return "weekends"
        return f"{_DAY_NAMES[first]} to {_DAY_NAMES[last % 7]}"
    numbers = [_number(part, _DAY_NUMBERS) for part in weekday.split(",")]
    if any(n is None or not 0 <= n <= 7 for n in numbers):
        return None
    days = sorted({n % 7 for n in numbers if n is not None})
    if days == [0, 6]:
        return "weekends"
    if days == [1, 2, 3, 4, 5]:
        return "weekdays"
    return _and([f"{_DAY_NAMES[n]}s" for n in days])


def _number(text: str, names: Mapping[str, int]) -> int | None:
    if text.isdigit():
        return int(text)
    return names.get(text.lower())


def _every(count: int, unit: str) -> str:
    return f"every {unit}" if count == 1 else f"every {count} {unit}s"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _duration(seconds: int) -> str:
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds % size == 0:
            return _every(seconds // size, unit).removeprefix("every ")
    return _every(seconds, "second").removeprefix("every ")
