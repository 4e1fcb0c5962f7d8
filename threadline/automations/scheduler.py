"""The schedule loop: every ``scheduler_interval_seconds`` it fires the schedules that are due.

It runs in every process that executes runs (the server when embedded, each ``threadline worker`` when
distributed); however many run, each tick fires once, because a firing row-locks its automation and
fires only if it is still due (``service.fire_schedule``). Ticks missed while no scheduler ran fire once,
at the first tick after start: the next time is computed from now, not from the missed one.

Due schedules are taken round robin across organizations (each organization's longest overdue first, then
each one's second, ...) and fired ``_CONCURRENT_FIRINGS`` at a time, in that order: an organization with
hundreds of schedules due at once delays another's first by one firing per organization ahead of it, not
by all of its own (issue 36: 200 of one organization's made another's fire 10.7 s late). Each firing
marks the moment it fired (``lastTriggeredAt``), not the tick's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from threadline.automations import repository, service
from threadline.billing.prices import Prices
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.errors import ApiError
from threadline.kit.signals import SignalBus
from threadline.kit.waiting import wait_event

log = logging.getLogger(__name__)

# Due schedules fired per query; a full batch is followed at once by the next.
_BATCH = 100
# Firings in flight at once: each is one transaction (a run, perhaps a thread), so a few overlap the
# database's round trips without taking the connection pool from requests.
_CONCURRENT_FIRINGS = 4


class Scheduler:
    def __init__(
        self,
        db: Database,
        signals: SignalBus,
        prices: Prices,
        clock: Clock,
        settings: Settings,
        *,
        concurrency: int = _CONCURRENT_FIRINGS,
    ) -> None:
        self._db = db
        self._signals = signals
        self._prices = prices
        self._clock = clock
        self._settings = settings
        self._interval = settings.scheduler_interval_seconds
        self._concurrency = concurrency
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="automation-scheduler")

    def wake(self) -> None:
        """Tick now rather than at the end of the interval (tests, after moving a clock)."""
        self._wake.set()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def tick(self) -> int:
        """Fires every schedule due now; how many this call fired (others may have fired the rest)."""
        fired = 0
        slots = asyncio.Semaphore(self._concurrency)

        async def fire(automation_id: str) -> bool | None:
            async with slots:  # waiters are woken in the order they came: the round robin's
                return await self._fire(automation_id)

        while True:
            now = self._clock.now()
            async with self._db.transaction(write=False) as conn:
                due = await repository.AutomationsAcrossOrganizations(conn).due(now, _BATCH)
            outcomes = await asyncio.gather(*(fire(automation_id) for automation_id in due))
            fired += sum(outcome is True for outcome in outcomes)
            # A full batch is followed by the next, unless none of it moved on (the database failing
            # each firing): those are due again at the next tick, not in a loop now.
            if len(due) < _BATCH or all(outcome is None for outcome in outcomes):
                return fired

    async def _fire(self, automation_id: str) -> bool | None:
        """True: fired. False: settled without a run (fired elsewhere, or the failure recorded). None: not
        settled (an unexpected error), so still due."""
        moment = self._clock.now()
        try:
            async with self._db.transaction() as conn:
                run = await service.fire_schedule(
                    conn, self._signals, self._prices, automation_id, now=moment, settings=self._settings
                )
        except ApiError as error:
            async with self._db.transaction() as conn:
                recorded = await service.firing_failed(conn, automation_id, "schedule", error, now=moment)
            if recorded:
                log.warning("automation %s fired without a run: %s", automation_id, error.message)
            return False
        except Exception:  # a deadlock, the database away: the others still fire; this one next tick
            log.exception("automation %s could not fire", automation_id)
            return None
        if run is not None:
            log.info("automation %s fired: run %s", automation_id, run.id)
        return run is not None

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.tick()
            except Exception:  # the database away: try again next interval
                log.exception("the scheduler's tick failed")
            await wait_event(self._wake, self._interval)
