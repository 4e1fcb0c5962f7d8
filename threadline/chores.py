"""Background chores of a process: housekeeping at start and hourly (telemetry retention, on PostgreSQL
the daily partitions, the sweeps of expired dashboard sessions, idempotency keys and webhook events past
their 30 days), and on PostgreSQL the sealing of search postings every two seconds (``search/postings.py``).

``runtime.open_services`` opens them where ``chores=True``: ``threadline serve`` with the API, the API app
under any other ASGI server (its own lifespan), and ``threadline worker``; never the intake alone. Several
processes may run them at once: each round is idempotent and safe to repeat (housekeeping's steps are
``IF [NOT] EXISTS`` DDL and deletes; sealing serialises on the watermark row and merging on an
advisory lock), so they only repeat each other's work."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

from threadline.dashboard.sessions import SessionSweeper
from threadline.kit.clock import Clock
from threadline.kit.waiting import every
from threadline.search import postings
from threadline.search.postings import PostingsSealer
from threadline.telemetry import housekeeping
from threadline.telemetry.housekeeping import Retention

log = logging.getLogger(__name__)

STOP_SECONDS = 5.0


class Sweeper(Protocol):
    """A housekeeping step that deletes what has expired (webhook events, idempotency keys)."""

    async def run_once(self) -> int: ...


class Chores:
    def __init__(
        self,
        retention: Retention,
        sealer: PostingsSealer | None,
        sessions: SessionSweeper,
        sweepers: Sequence[Sweeper] = (),
        *,
        clock: Clock,
    ) -> None:
        """``sealer``: PostgreSQL's only (SQLite's FTS5 counts from its own index, so it needs none)."""
        self._retention = retention
        self._clock = clock  # what retention counts its days back from
        self._sealer = sealer
        self._sessions = sessions
        self._sweepers = tuple(sweepers)
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        housekeeping_rounds = every(housekeeping.INTERVAL_SECONDS, self.housekeep, "housekeeping")
        self._tasks = {asyncio.create_task(housekeeping_rounds, name="threadline-housekeeping")}
        if self._sealer is not None:
            self._tasks.add(
                asyncio.create_task(postings.run_periodically(self._sealer), name="threadline-postings")
            )

    async def housekeep(self) -> None:
        """One round: each sweep runs even when an earlier step failed (each is retried next round)."""
        try:
            await housekeeping.run_once(self._retention, self._clock.now())
        finally:
            try:
                await self._sessions.run_once()
            finally:
                for sweeper in self._sweepers:
                    try:
                        await sweeper.run_once()
                    except Exception:
                        log.exception("%s failed; retried next round", type(sweeper).__name__)

    def running(self) -> set[str]:
        """The chores still running."""
        return {task.get_name() for task in self._tasks if not task.done()}

    async def aclose(self) -> None:
        tasks, self._tasks = self._tasks, set()
        if not tasks:
            return
        for task in tasks:
            task.cancel()
        # Bounded: shutdown must not depend on a database driver honouring the cancellation.
        done, pending = await asyncio.wait(tasks, timeout=STOP_SECONDS)
        for task in pending:
            log.warning("%s did not stop within %s s; leaving it", task.get_name(), STOP_SECONDS)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.warning("%s ended with an error", task.get_name(), exc_info=task.exception())
