"""Executes runs: claims queued runs, holds them by lease, runs the agent, ends them; and fails the runs
whose executor died.

One executor per process that executes runs: the server in the embedded shape, each ``threadline worker``
in the distributed one. An executor wakes on ``runs.queued`` (a run was created, or a thread's run ended so
its next one may start) and also looks every second, so a lost signal delays a run by a second at most.
Each run it holds has a lease in the database, renewed every third of ``run_lease_seconds``; a process that
dies stops renewing, and any executor (the reaper runs in every process but ``serve-intake``, executing or
not) ends its runs ``failed`` with an ``error`` event once the lease has lapsed, so their streams end with
``[DONE]``. Cancellation arrives as ``runs.cancelled`` and stops the run's task at once; a renewal that finds
the run no longer held (the signal was lost) stops it too.

Slots are shared fairly: besides this process's ``max_concurrent_runs``, each organization has at most its
``run_concurrency`` runs executing across every process, and the claim prefers the organization with the
fewest running (``runs.claim``), so one organization's queue never holds every slot;
and a run executing longer than ``run_max_seconds`` fails ``RUN_TIMEOUT``, so no slot is held forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import socket
import time
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

from threadline.agent.loop import DEFAULT_INSTRUCTIONS, run_agent
from threadline.agent.models import ChatMessage, ModelError
from threadline.agent.registry import Models
from threadline.agent.response_format import stored_format
from threadline.agent.suspension import Suspension
from threadline.agent.tools import ToolContext, Tools
from threadline.billing.prices import Prices
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.db import Conn, Database
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import Reason
from threadline.kit.faults import dependency_of, riding_out
from threadline.kit.metrics import EXECUTOR_SLOTS, EXECUTOR_SLOTS_IN_USE
from threadline.kit.signals import RESET, SignalBus
from threadline.kit.waiting import wait_event
from threadline.messages.repository import MessageRepository
from threadline.runs import actions, events, service
from threadline.runs.recorder import RunAborted, RunRecorder, announce
from threadline.runs.repository import Run, RunsAcrossOrganizations, Status
from threadline.runs.run_tools import open_run_tools
from threadline.runs.service import RUN_CANCELLED, RUNS_QUEUED

log = logging.getLogger(__name__)

_POLL_SECONDS = 1.0
HISTORY_MESSAGES = 50
# How long a stopping executor waits for its runs to record their end.
_STOP_SECONDS = 5.0


class RunExecutor:
    def __init__(
        self,
        db: Database,
        signals: SignalBus,
        tools: Tools,
        settings: Settings,
        prices: Prices,
        *,
        execute: bool,
        clock: Clock,
        box: SecretBox | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        self._db = db
        self.clock = clock  # leases, expiresAt and their sweeps (tests move a ManualClock)
        self._box = box
        self._egress = egress or EgressPolicy()
        self._prices = prices
        self._signals = signals
        self._tools = tools
        self._settings = settings
        self._models = Models(settings)
        self._execute = execute
        self.owner = f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lease = timedelta(seconds=settings.run_lease_seconds)
        # How long a run waits out an outage of the database: a lease renewed every third of its length
        # has two thirds left when the outage starts, so renewals resume before it lapses. Recording a
        # run's end waits longer: once the lease lapsed, a reaper ends the run anyway (EXECUTOR_LOST).
        self._outage_seconds = settings.run_lease_seconds / 2
        self._ending_outage_seconds = settings.run_lease_seconds * 2
        self._running: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        signals.subscribe(self._on_signal)

    def _on_signal(self, topic: str, payload: str) -> None:
        if topic in (RUNS_QUEUED, RESET):
            self._wake.set()
        elif topic == RUN_CANCELLED:
            task = self._running.get(payload)
            if task is not None:
                self._cancelled.add(payload)
                task.cancel()

    def start(self) -> None:
        if self._execute:
            EXECUTOR_SLOTS.inc(self._settings.max_concurrent_runs)
        self._task = asyncio.create_task(self._loop(), name="run-executor")

    async def aclose(self) -> None:
        """Stops claiming; runs still executing end ``failed`` (``EXECUTOR_STOPPED``), never left running."""
        self._stopping = True
        if self._task is not None:
            if self._execute:
                EXECUTOR_SLOTS.dec(self._settings.max_concurrent_runs)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=_STOP_SECONDS)
        await self._models.aclose()

    async def _loop(self) -> None:
        next_renewal = next_reap = 0.0
        renew_every = self._settings.run_lease_seconds / 3
        while True:
            self._wake.clear()
            try:
                if self._execute:
                    await self._claim_all()
                now = time.monotonic()
                if self._running and now >= next_renewal:
                    next_renewal = now + renew_every
                    await self._renew()
                if now >= next_reap:
                    next_reap = now + min(renew_every, _POLL_SECONDS * 2)
                    await self.reap()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is away: keep the loop alive, try again shortly
                log.warning("run executor could not reach the database; retrying", exc_info=True)
            await wait_event(self._wake, min(_POLL_SECONDS, renew_every))

    async def _claim_all(self) -> None:
        while not self._stopping and len(self._running) < self._settings.max_concurrent_runs:
            async with self._db.transaction() as conn:
                now = self.clock.now()
                claimed = await service.claim(
                    conn, self.owner, now, now + self._lease, self._settings.default_run_concurrency
                )
            if claimed is None:
                return
            run, started = claimed
            task = asyncio.create_task(self._execute_run(run), name=f"run-{run.id}")
            self._running[run.id] = task
            EXECUTOR_SLOTS_IN_USE.inc()
            task.add_done_callback(functools.partial(self._release, run.id))
            if started:
                await announce(self._signals, events.announcement(run.organization_id, run.id, started))

    def _release(self, run_id: str, _task: object = None) -> None:
        """A run's task is over, however it ended (even cancelled before its first step): its slot frees."""
        if self._running.pop(run_id, None) is not None:
            EXECUTOR_SLOTS_IN_USE.dec()
        self._cancelled.discard(run_id)
        self._wake.set()

    async def _renew(self) -> None:
        async with self._db.transaction() as conn:
            held = await RunsAcrossOrganizations(conn).renew_leases(
                self.owner, self._running, self.clock.now() + self._lease
            )
        for run_id, task in list(self._running.items()):
            if run_id not in held and not task.done():
                log.info("run %s is no longer held by this executor; stopping it", run_id)
                self._cancelled.add(run_id)
                task.cancel()

    async def reap(self) -> int:
        """Ends the runs whose lease lapsed (their executor died); how many it ended."""
        now = self.clock.now()
        async with self._db.transaction(write=False) as conn:
            lapsed = await RunsAcrossOrganizations(conn).expired(now)
        ended = 0
        for run_id in lapsed:
            async with self._db.transaction() as conn:
                run = await service.end_run(
                    conn,
                    self._signals,
                    self._prices,
                    run_id,
                    "failed",
                    ("EXECUTOR_LOST", "The process executing the run stopped before it ended."),
                    expired_before=now,
                    now=now,
                )
            if run is not None:
                log.warning("run %s failed: its executor stopped renewing its lease", run_id)
                ended += 1
        return ended + await self.expire_actions()

    async def expire_actions(self) -> int:
        """Ends the runs that waited for their caller past ``expiresAt`` (``ACTION_EXPIRED``), by the
        injected clock; how many it ended."""
        now = self.clock.now()
        async with self._db.transaction(write=False) as conn:
            due = await actions.due(conn, now)
        ended = 0
        for run_id in due:
            async with self._db.transaction() as conn:
                ended += await actions.expire(conn, self._signals, self._prices, run_id, now) is not None
        return ended

    async def _execute_run(self, run: Run) -> None:
        recorder = RunRecorder(
            self._db,
            self._signals,
            organization_id=run.organization_id,
            run_id=run.id,
            thread_id=run.thread_id,
            owner=self.owner,
            event_count=run.event_count,
            outage_seconds=self._outage_seconds,
            clock=self.clock,
        )
        outcome: _Outcome = ("completed", None)
        limit = self._settings.run_max_seconds
        deadline = asyncio.timeout(limit)  # from the claim (or, for a run that waited, from its resumption)
        try:
            async with deadline, contextlib.AsyncExitStack() as stack:
                response_format = stored_format(run.response_format)
                try:
                    model = self._models.get(run.model, response_format)
                except ValueError as error:  # a setting that named a model no provider serves
                    raise ModelError("MODEL_ERROR", str(error)) from error
                resume = Suspension.decode(run.agent_state) if run.agent_state is not None else None
                history = await self._history(run) if resume is None else []
                tools = await open_run_tools(
                    stack,
                    self._db,
                    self._tools,
                    run.organization_id,
                    run.tools,
                    box=self._box,
                    policy=self._egress,
                )
                context = ToolContext(self._db, recorder)
                waiting = await run_agent(
                    model, tools, context, history, resume, response_format=response_format
                )
                await recorder.flush()
                if waiting is not None:
                    outcome = ("requires_action", waiting)
        except ModelError as error:
            outcome = ("failed", (error.code, error.message))
        except RunAborted:
            outcome = None
        except asyncio.CancelledError:
            outcome = None if run.id in self._cancelled else ("failed", _STOPPED)
        except Exception as error:
            if isinstance(error, TimeoutError) and deadline.expired():  # ours, not one escaping from inside
                outcome = ("failed", ("RUN_TIMEOUT", f"The run executed for longer than {limit:g} s."))
            elif (dependency := dependency_of(error)) is not None:
                log.warning("run %s failed: %s unavailable: %r", run.id, dependency, error)
                outcome = ("failed", _dependency_down(dependency, self._outage_seconds))
            else:
                log.exception("run %s failed unexpectedly", run.id)
                outcome = ("failed", _INTERNAL)
        finally:
            await _uncancellable(self._finish(run, recorder, outcome))

    async def _finish(self, run: Run, recorder: RunRecorder, outcome: _Outcome) -> None:
        if outcome is not None:
            with contextlib.suppress(Exception):
                await recorder.flush()  # what the agent emitted before the end goes first
        await recorder.aclose()
        if outcome is None:
            return
        status, error = outcome
        if isinstance(error, Suspension):
            await self._suspend(run, error)
            return

        async def end(_retry: bool) -> None:
            async with self._db.transaction() as conn:
                await service.end_run(
                    conn,
                    self._signals,
                    self._prices,
                    run.id,
                    status,
                    error,
                    owner=self.owner,
                    now=self.clock.now(),
                )

        try:
            await riding_out(end, within=self._ending_outage_seconds, what=f"ending run {run.id}")
        except Exception:  # its lease will lapse and the reaper will end it
            log.exception("could not record the end of run %s", run.id)

    async def _suspend(self, run: Run, suspension: Suspension) -> None:
        async def suspend(_retry: bool) -> None:
            async with self._db.transaction() as conn:
                await actions.suspend_run(
                    conn, self._signals, run.id, self.owner, suspension, self.clock.now()
                )

        try:
            await riding_out(suspend, within=self._ending_outage_seconds, what=f"suspending run {run.id}")
        except Exception:  # its lease will lapse and the reaper will end it
            log.exception("could not record that run %s waits for its caller", run.id)

    async def _history(self, run: Run) -> list[ChatMessage]:
        async with self._db.transaction(write=False) as conn:
            recent = await _recent_messages(conn, run)
        instructions = run.instructions or DEFAULT_INSTRUCTIONS
        return [ChatMessage("system", instructions), *recent]


async def _uncancellable(ending: Coroutine[Any, Any, None]) -> None:
    """Awaits ``ending`` to its end even if the caller is cancelled meanwhile (a shutdown while a run is
    recording its end): abandoned halfway, the run would stay running until its lease lapsed."""
    task = asyncio.ensure_future(ending)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)


# How a run's execution ended: its status and error, or None when it already ended elsewhere; or that it
# waits for its caller (``requires_action`` with the agent's state).
_Outcome = tuple[Status, tuple[str, str] | Suspension | None] | None
_INTERNAL = ("INTERNAL_ERROR", "The run failed unexpectedly.")
# A run ended by an outage carries the code an API request gets for one (its reason).
_DEPENDENCY_DOWN = Reason.DEPENDENCY_DOWN.value


def _dependency_down(dependency: str, waited: float) -> tuple[str, str]:
    return (
        _DEPENDENCY_DOWN,
        f"The {dependency} was unavailable for longer than the run could wait ({waited:g} s).",
    )


_STOPPED = ("EXECUTOR_STOPPED", "The process executing the run shut down before the run ended.")


async def _recent_messages(conn: Conn, run: Run) -> list[ChatMessage]:
    recent = await MessageRepository(conn, run.organization_id).history(
        run.thread_id, up_to_run=run.id, limit=HISTORY_MESSAGES
    )
    return [ChatMessage(message.role, message.content) for message in recent]
