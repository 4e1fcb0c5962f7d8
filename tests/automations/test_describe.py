"""Triggers in words: the common cron shapes read as people say them; anything else shows the expression."""

from __future__ import annotations

import pytest

from threadline.automations.describe import (
    describe_cooldown,
    describe_cron,
    describe_log_filter,
    describe_schedule,
    describe_trigger,
)


@pytest.mark.parametrize(
    ("cron", "words"),
    [
        ("0 8 * * 1-5", "weekdays at 08:00"),
        ("30 7 * * MON-FRI", "weekdays at 07:30"),
        ("0 8 * * 1,2,3,4,5", "weekdays at 08:00"),
        ("0 10 * * 0,6", "weekends at 10:00"),
        ("0 10 * * 6-7", "weekends at 10:00"),
        ("0 9 * * *", "daily at 09:00"),
        ("0 9 * * 0-6", "daily at 09:00"),
        ("0 8,17 * * *", "daily at 08:00 and 17:00"),
        ("15 6,12,18 * * *", "daily at 06:15, 12:15 and 18:15"),
        ("0 9 * * 1", "Mondays at 09:00"),
        ("0 9 * * 7", "Sundays at 09:00"),
        ("0 9 * * mon,fri", "Mondays and Fridays at 09:00"),
        ("0 9 * * 2-4", "Tuesday to Thursday at 09:00"),
        ("0 0 1 * *", "on the 1st of every month at 00:00"),
        ("0 6 1,15 * *", "on the 1st and 15th of every month at 06:00"),
        ("0 6 22 * *", "on the 22nd of every month at 06:00"),
        ("0 6 L * *", "on the last day of every month at 06:00"),
        ("0 0 25 12 *", "every year on December 25 at 00:00"),
        ("0 0 3 mar *", "every year on March 3 at 00:00"),
        ("* * * * *", "every minute"),
        ("*/15 * * * *", "every 15 minutes"),
        ("0/5 * * * *", "every 5 minutes"),
        ("*/15 * * * 1-5", "every 15 minutes on weekdays"),
        ("*/10 9-17 * * *", "every 10 minutes from 09:00 to 17:59"),
        ("0 * * * *", "every hour"),
        ("30 * * * *", "every hour at :30"),
        ("0 */2 * * *", "every 2 hours"),
        ("5 */6 * * *", "every 6 hours at :05"),
        ("0 9-17 * * 1-5", "every hour from 09:00 to 17:59 on weekdays"),
        ("@hourly", "every hour"),
        ("@daily", "daily at 00:00"),
        ("@weekly", "Sundays at 00:00"),
        ("@monthly", "on the 1st of every month at 00:00"),
        ("@YEARLY", "every year on January 1 at 00:00"),
    ],
)
def test_common_shapes_in_words(cron: str, words: str) -> None:
    assert describe_cron(cron) == words


@pytest.mark.parametrize(
    "cron",
    [
        "0 9 1 * 1",  # a day of the month or a day of the week: cron's "either" reads badly in words
        "0 9 */2 * *",
        "0 9 * */3 *",
        "0 9 * 1-6 *",
        "0 9 * * 1#2",
        "0 9 LW * *",
        "0 9-17/2 * * *",
        "0 1,2,3,4,5 * * *",
        "*/15 */2 * * *",
        "0 9 * * 5-1",
        "1 2 3",
    ],
)
def test_other_shapes_fall_back_to_the_expression(cron: str) -> None:
    assert describe_cron(cron) is None
    assert describe_schedule(cron, "UTC") == f"{cron}, UTC"


def test_schedules_name_their_time_zone() -> None:
    assert describe_schedule("0 8 * * 1-5", "Europe/Berlin") == "weekdays at 08:00, Europe/Berlin"
    trigger = {"type": "schedule", "cron": "*/15 * * * *", "timezone": "UTC"}
    assert describe_trigger(trigger) == "every 15 minutes, UTC"


def test_log_filters_in_words() -> None:
    assert describe_log_filter("error", "timeout", None) == "error logs containing 'timeout'"
    assert describe_log_filter("fatal", None, None) == "fatal logs"
    assert describe_log_filter("warn", None, "Shop") == "logs at warn or above of project Shop"
    trigger = {"type": "log", "projectId": "prj_1", "level": "error", "contains": None, "cooldownSeconds": 0}
    assert describe_trigger(trigger) == "error logs of project prj_1"
    assert describe_trigger(trigger, "Shop") == "error logs of project Shop"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0, "fires on every match"),
        (1, "at most once every second"),
        (45, "at most once every 45 seconds"),
        (60, "at most once every minute"),
        (300, "at most once every 5 minutes"),
        (3600, "at most once every hour"),
        (5400, "at most once every 90 minutes"),
        (172800, "at most once every 2 days"),
    ],
)
def test_cooldowns_in_words(seconds: int, words: str) -> None:
    assert describe_cooldown(seconds) == words
