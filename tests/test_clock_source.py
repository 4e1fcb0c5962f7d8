"""Where the product reads the time of day, read from the source.

Every decision that depends on "now" (expiries, leases, schedules, cooldowns, retention, stream tokens,
sessions, idempotency keys, webhooks, the timestamps runs and rows carry) reads the injectable
``kit.clock.Clock`` that ``runtime.open_services`` composes (``Services.clock``, or the clock an object
was built with), so a test moves a ``ManualClock`` instead of sleeping. A call that reads the wall clock
directly anywhere else fails here until it is listed with its reason. ``time.monotonic`` and
``time.perf_counter`` measure durations and timeouts: they are not "now", and are not looked for.
"""

from __future__ import annotations

import ast

from tests.source_scan import places_calling

# Calls that read the wall clock: ``.now()`` on anything but a clock (``datetime.now``, an alias of it),
# ``utcnow()`` by any path (``datetime.utcnow``, ``kit.clock.utcnow``), ``today()`` and ``time.time()`` or
# ``time.time_ns()``.
_TIME_READS = {"time", "time_ns"}

ALLOWED: dict[tuple[str, str], str] = {
    ("kit/clock.py", "utcnow"): "the system clock itself: what ``Clock.now`` returns",
    ("kit/clock.py", "Clock.now"): "the services' clock in production: the system's",
    ("kit/clock.py", "Clock.timestamp"): "the same clock as POSIX seconds, for the per-request paths",
    ("kit/ids.py", "new_id"): (
        "an id carries the millisecond it was made at; ids are made by module-level calls everywhere, so "
        "they sort in creation order on the system clock whatever the services' clock says"
    ),
    ("kit/ids.py", "ids_after"): "the same, for the ids of log records, made in commit order",
    ("kit/ids.py", "ids_now"): (
        "the ids' clock as a datetime: a position or a window among log records (received at their id's "
        "moment) is measured on it, not on the services' clock"
    ),
    ("automations/schedule.py", "check_cron"): (
        "a schema's validator (no services at hand) asks whether an expression is ever due, from any "
        "moment; when it is due is computed from the services' clock (``next_time``)"
    ),
}


def _reads_wall_clock(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "utcnow"
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    if isinstance(owner, ast.Call):  # ``Clock().now()``: the owner is what was called
        owner = owner.func
    owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
    if func.attr == "now":
        return "clock" not in owner_name.lower()
    if func.attr in ("utcnow", "today"):
        return True
    return func.attr in _TIME_READS and owner_name == "time"


def _places() -> set[tuple[str, str]]:
    return places_calling(_reads_wall_clock)


def test_the_wall_clock_is_read_only_where_listed() -> None:
    places = _places()
    unlisted = places - ALLOWED.keys()
    assert not unlisted, (
        f"the wall clock read where no reason is listed (use the services' Clock): {sorted(unlisted)}"
    )
    assert not ALLOWED.keys() - places, "listed but gone: remove it from ALLOWED"


# Where the system's ``Clock()`` is made: the composition roots. Everything else is handed the one they made.
COMPOSED: dict[tuple[str, str], str] = {
    ("runtime.py", "open_services"): "the services' clock, unless the caller (a test) passes one",
    ("cli/backup.py", "backup"): "an operator command: the backup file is named after its moment",
    ("cli/keys_mint.py", "mint_key.work"): "an operator command, run without services",
    ("cli/operator.py", "create_org.work"): "an operator command, run without services",
    ("cli/operator.py", "grant_credits.work"): "an operator command, run without services",
    ("cli/operator.py", "init.work"): "an operator command, run without services",
    ("cli/operator.py", "set_limit.work"): "an operator command, run without services",
    ("cli/users.py", "create_user.work"): "an operator command, run without services",
}


def _makes_clock(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "Clock"


def _clocks_made() -> set[tuple[str, str]]:
    return places_calling(_makes_clock)


def test_the_system_clock_is_made_only_where_the_parts_are_composed() -> None:
    """``Clock().now()`` would pass the scan above from anywhere: a clock made outside a composition root
    is one a test cannot move."""
    made = _clocks_made()
    unlisted = made - COMPOSED.keys()
    assert not unlisted, (
        f"a Clock made outside a composition root (take it as a parameter): {sorted(unlisted)}"
    )
    assert not COMPOSED.keys() - made, "listed but gone: remove it from COMPOSED"


def test_the_scan_finds_each_way_of_reading_the_wall_clock() -> None:
    """The scan itself: each spelling is found, and what measures durations is not."""
    source = """
import time, datetime
from datetime import datetime as dt
def a(): datetime.datetime.now()
def b(): dt.now(UTC)
def c(): time.time()
def d(): utcnow()
def e(): clock.utcnow()
def f(): time.time_ns()
def g(): date.today()
def h(): time.monotonic(); time.perf_counter(); services.clock.now(); self._clock.now(); Clock().now()
def i(): datetime.fromtimestamp(0)
"""
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    found = {
        function.name
        for function in ast.walk(ast.parse(source))
        if isinstance(function, ast.FunctionDef)
        for call in ast.walk(function)
        if isinstance(call, ast.Call) and _reads_wall_clock(call)
    }
    assert calls and found == {"a", "b", "c", "d", "e", "f", "g"}
