"""The schedule loop: every ``scheduler_interval_seconds`` it fires the schedules that are due.

It runs in every process that executes runs (the server when embedded, each ``threadline worker`` when
distributed); however many run, each tick fires once, because a firing row-locks its automation and
fires only if it is still due (``service.fire_schedule``). Ticks missed while no scheduler ran fire once,
at the first tick after start: the next time is computed from now, not from the missed one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime

from threadline.automations import repository, service
from threadline.billing.prices import Prices
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.errors import ApiError
from threadline.kit.signals import SignalBus
from threadline.kit.waiting import wait_event

log = logging.getLogger(__name__)

# Due schedules fired per query; a full batch is followed at once by the next.
_BATCH = 100


class Scheduler:
    def __init__(
        self, db: Database, signals: SignalBus, prices: Prices, clock: Clock, *, interval: float
    ) -> None:
        self._db = db
        self._signals = signals
        self._prices = prices
        self._clock = clock
        self._interval = interval
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
        while True:
            now = self._clock.now()
            async with self._db.transaction(write=False) as conn:
                due = await repository.AutomationsAcrossOrganizations(conn).due(now, _BATCH)
            for automation_id in due:
                fired += await self._fire(automation_id, now)
            if len(due) < _BATCH:
                return fired

    async def _fire(self, automation_id: str, moment: datetime) -> bool:
        try:
            async with self._db.transaction() as conn:
                run = await service.fire_schedule(
                    conn, self._signals, self._prices, automation_id, now=moment
                )
        except ApiError as error:
            async with self._db.transaction() as conn:
                recorded = await service.firing_failed(conn, automation_id, "schedule", error, now=moment)
            if recorded:
                log.warning("automation %s fired without a run: %s", automation_id, error.message)
            return False
        except Exception:  # a deadlock, the database away: the others still fire; this one next tick
            log.exception("automation %s could not fire", automation_id)
            return False
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
