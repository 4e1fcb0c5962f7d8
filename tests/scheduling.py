"""How ``scripts/test.sh`` shares the suite between pytest-xdist's workers (``--dist loadfile``): in units
that keep what a unit's tests share on one worker, handed out longest first, so both workers end together.

xdist's ``loadfile`` queues one unit per file and gives the next unit to whichever worker runs low. A run
on two processes took 0.72 of one's time, not about half (bench/HISTORY.md "CI time on a quiet machine"),
and three things in how that queue met this suite cost time ("CI on two processes"):

* Its queue is sorted by the number of tests per unit, so the slowest files (a few long tests each: browser
  journeys, the operator CLI, served processes, the fuzz run) came last and one worker ran them alone for
  minutes. Here the queue keeps the order of :data:`HEAVIEST` (longest first, the classic rule for
  spreading jobs over machines), the rest following in the suite's order.
* Most tests run on both storage shapes through the session fixture ``backend`` (tests/conftest.py), and a
  worker that runs a file's embedded tests, then its distributed ones, then the next file's embedded ones
  makes each shape again: a fresh PostgreSQL database with every migration, and a SQLite one, per file. One
  process never pays this (pytest groups a session parameter's tests together); a worker does, unless the
  units are a file's tests *of one shape* and every embedded unit is queued before every distributed one.
  Then each worker makes each shape about once.
* The browser journeys share one server per shape for their package (tests/dashboard/browser/conftest.py);
  as separate units, each file on a worker started and stopped them. :data:`TOGETHER` lists such
  directories: all their files of one shape make one unit.

Units split a file by shape only: its module-scoped fixtures that do not depend on the shape are then made
once per shape, possibly on both workers at once (none takes a fixed port or a shared file, which two
workers running one file at once would need). In one process (``-n 0``, ``-p no:xdist``) nothing changes
order: it would save nothing there.

Refreshing :data:`HEAVIEST` (when the durations at the end of a CI run no longer match it): run the suite
with every duration listed and sum them per unit, which ``python -m tests.scheduling`` does from that
output::

    bash scripts/test.sh --durations=0 --durations-min=0 > durations.txt
    .venv/bin/python -m tests.scheduling < durations.txt

It prints each unit's test-seconds, longest first; list the files (or :data:`TOGETHER` directories) that
take over ~30 s in either shape, in that order. A file missing from the list is only queued after the
listed ones, in the suite's order: a new slow file costs time, never a failure.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.remote import Producer  # type: ignore[import-untyped]
    from xdist.scheduler.protocol import Scheduling  # type: ignore[import-untyped]

# Directories whose files share package-scoped servers: one unit per shape.
TOGETHER = ("tests/dashboard/browser/",)

# Longest first: the top modules of the whole suite's durations on `-n 2` (bench/HISTORY.md "CI time").
HEAVIEST = (
    "tests/dashboard/browser/",
    "tests/cli/test_operator.py",
    "tests/test_serve.py",
    "tests/cli/test_no_database.py",
    "tests/cli/test_client.py",
    "tests/cli/test_billing_automations.py",
    "tests/cli/test_preflight.py",
    "tests/test_fuzz_contract.py",
    "tests/dashboard/test_automations_pages.py",
    "tests/dashboard/test_sessions.py",
    "tests/dashboard/test_keys_pages.py",
)

SHAPES = ("embedded", "distributed")


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: its file (or :data:`TOGETHER` directory), and its shape if it has one
    (``tests/x.py`` or ``tests/x.py[distributed]``). Read from the test's id alone, as xdist's controller
    sees only ids: the shape is one of the ``-``-separated parameter ids."""
    path, _, name = nodeid.partition("::")
    path = next((directory for directory in TOGETHER if path.startswith(directory)), path)
    _, bracket, parameters = name.partition("[")  # names hold no "[", ids may hold "[", "]" and "::"
    ids = parameters.removesuffix("]").split("-") if bracket else []
    shape = next((shape for shape in SHAPES if shape in ids), None)
    return f"{path}[{shape}]" if shape else path


def _rank(unit: str) -> tuple[int, int]:
    """Where a unit goes in the queue: every embedded (or shape-less) unit before every distributed one,
    and within each, :data:`HEAVIEST`'s order, the units it does not name last."""
    phase = int(unit.endswith("[distributed]"))
    heavy = next((i for i, path in enumerate(HEAVIEST) if unit.startswith(path)), len(HEAVIEST))
    return phase, heavy


def queued(nodeids: Iterable[str]) -> list[str]:
    """The ids in the order their units should be handed out; each unit's tests keep their order (pytest's,
    which groups a module's and a class's fixtures)."""
    order = {nodeid: index for index, nodeid in enumerate(nodeids)}
    return sorted(order, key=lambda nodeid: (_rank(unit_of(nodeid)), order[nodeid]))


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture scope, which this keeps in a unit
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # one process: the order saves nothing there
        return
    # Every worker collects and sorts alike (the controller checks that their collections are equal); the
    # controller queues the units in the order they first appear.
    position = {nodeid: index for index, nodeid in enumerate(queued(item.nodeid for item in items))}
    items.sort(key=lambda item: position[item.nodeid])


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own; optional: `-p no:xdist` has none
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class UnitScheduling(LoadFileScheduling):  # type: ignore[misc]
        """``loadfile`` with this module's units, queued in the collection's order."""

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    # xdist would otherwise sort the queue by the number of tests per unit, undoing HEAVIEST's order.
    config.option.loadscopereorder = False
    return UnitScheduling(config, log)


def unit_seconds(durations: Iterable[str]) -> dict[str, float]:
    """Seconds per unit, summed over pytest's ``--durations`` lines (``1.23s call  tests/x.py::test``)."""
    total: dict[str, float] = defaultdict(float)
    for line in durations:
        seconds, _, rest = line.strip().partition("s ")
        phase, _, nodeid = rest.strip().partition(" ")
        if phase in ("setup", "call", "teardown") and "::" in nodeid:
            try:
                total[unit_of(nodeid.strip())] += float(seconds)
            except ValueError:
                continue
    return dict(total)


def main() -> None:
    for unit, seconds in sorted(unit_seconds(sys.stdin).items(), key=lambda pair: -pair[1]):
        print(f"{seconds:9.1f}  {unit}")


if __name__ == "__main__":
    main()
