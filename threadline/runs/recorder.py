"""How an executing run writes its events: buffered, committed in order, announced after each commit.

The agent emits events as fast as the model streams; a background task commits whatever has accumulated
in one transaction (with the side effects that belong to those events, such as the assistant's message
with its ``text_complete``) and announces it, so a fast model costs one transaction per burst instead of
one per token, and a slow client never slows the run. Each commit first checks that this executor still
holds the running run: once the run was cancelled or its lease taken over, the commit writes nothing and
the agent is stopped (``RunAborted``). A commit that meets a dependency outage (PostgreSQL restarting) is
retried for up to ``outage_seconds`` (the executor gives half the lease: renewals resume before it
lapses), so a short outage delays a run instead of failing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass
from typing import Any

from threadline.agent.models import Usage
from threadline.agent.recorder import Effect
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.faults import riding_out
from threadline.kit.signals import SignalBus
from threadline.runs import events
from threadline.runs.events import RUN_EVENTS, Event
from threadline.runs.repository import RunsAcrossOrganizations
from threadline.threads.repository import ThreadRepository

log = logging.getLogger(__name__)


# An agent that outruns the database waits once this many events are uncommitted.
_MAX_PENDING = 512


class RunAborted(Exception):
    """The run ended elsewhere (cancelled, or its lease lapsed and it was failed): stop working on it."""


@dataclass(slots=True)
class _Pending:
    type: str
    payload: dict[str, Any]
    effect: Effect | None


class RunRecorder:
    """The agent's ``Recorder`` (``agent.recorder``) for one executing run."""

    def __init__(
        self,
        db: Database,
        signals: SignalBus,
        *,
        organization_id: str,
        run_id: str,
        thread_id: str,
        owner: str,
        event_count: int,
        outage_seconds: float,
        clock: Clock,
    ) -> None:
        self._db = db
        self._clock = clock  # dates the events and their effects
        self._signals = signals
        self.organization_id = organization_id
        self.run_id = run_id
        self.thread_id = thread_id
        self._owner = owner
        self._pending: list[_Pending] = []
        self._usage = Usage()
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._failure: BaseException | None = None
        self._closing = False
        self.event_count = event_count
        self._outage_seconds = outage_seconds
        self._task = asyncio.create_task(self._flush_loop(), name=f"recorder-{run_id}")

    async def emit(self, type_: str, payload: dict[str, Any], *, effect: Effect | None = None) -> None:
        self._raise_if_failed()
        self._pending.append(_Pending(type_, payload, effect))
        self._drained.clear()
        self._wake.set()
        if len(self._pending) >= _MAX_PENDING:
            await self.flush()

    def add_usage(self, usage: Usage) -> None:
        self._usage = self._usage + usage
        self._drained.clear()
        self._wake.set()

    async def flush(self) -> None:
        """Returns once everything emitted so far is committed (raises what stopped the run, if anything)."""
        await self._drained.wait()
        self._raise_if_failed()

    async def aclose(self) -> None:
        self._closing = True
        self._wake.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    async def _flush_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._failure is None and (self._pending or self._usage != Usage()):
                batch, self._pending = self._pending, []
                usage, self._usage = self._usage, Usage()
                try:
                    await riding_out(
                        functools.partial(self._commit, batch, usage),
                        within=self._outage_seconds,
                        what=f"run {self.run_id}",
                    )
                except BaseException as error:  # the run is over for this executor; tell the agent
                    self._failure = error if isinstance(error, Exception) else RunAborted()
                    if not isinstance(error, Exception):
                        self._drained.set()
                        raise
            self._pending.clear()
            self._drained.set()
            if self._closing:
                return

    async def _commit(self, batch: list[_Pending], usage: Usage, retry: bool) -> None:
        if retry and await self._landed(len(batch)):
            return
        async with self._db.transaction() as conn:
            # Side effects first, after locking the thread's row: runs.service's lock order is the thread,
            # then the run (an artifact's foreign keys would otherwise share-lock the run, then wait for the
            # thread, while a cancel holds the thread and waits for the run).
            now = self._clock.now()
            effects = [pending.effect for pending in batch if pending.effect is not None]
            if effects:
                await ThreadRepository(conn, self.organization_id).get(self.thread_id, for_update=True)
            for effect in effects:
                await effect(conn, now)
            last = await RunsAcrossOrganizations(conn).advance(
                self.run_id, self._owner, len(batch), usage.input_tokens, usage.output_tokens
            )
            if last is None:
                raise RunAborted()
            first = last - len(batch) + 1
            made: list[Event] = [
                events.render(self.run_id, self.thread_id, first + i, p.type, p.payload, now)
                for i, p in enumerate(batch)
            ]
            await events.EventRepository(conn, self.organization_id).insert(self.run_id, made)
        self.event_count = last
        if made:
            await announce(self._signals, events.announcement(self.organization_id, self.run_id, made))

    async def _landed(self, count: int) -> bool:
        """Whether the previous attempt's COMMIT, cut off by the outage, was applied after all: the run's
        events then already end ``count`` past ours (streams read them from the database)."""
        async with self._db.transaction(write=False) as conn:
            run = await RunsAcrossOrganizations(conn).get(self.run_id)
        if count == 0 or run is None or run.event_count != self.event_count + count:
            return False
        self.event_count = run.event_count
        return True


async def announce(signals: SignalBus, announcement: str) -> None:
    """After a commit: a lost announcement delays streams by their one-second re-read, so a failure to
    publish (Redis away) is logged, never allowed to fail the run whose events are already committed."""
    try:
        await signals.publish(RUN_EVENTS, announcement)
    except Exception:
        log.warning("could not announce run events; streams will read them from the database", exc_info=True)
