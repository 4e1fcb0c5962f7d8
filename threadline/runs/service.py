"""Run rules: one active run per thread (with the three multitask strategies), cancellation, and the
ends of a run, each a transaction that writes the run's status, its events and the thread's active run
together, and announces the events after it commits.

Lock order, everywhere: the thread's row, then the run's, then (a run's end charges its usage) the
organization's billing account. Claiming a run touches only the run (the run it claims already is its
thread's active run) and its organization's row, both taken with ``SKIP LOCKED`` (a claim never waits for a
lock), so no two transactions wait on each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from threadline.agent.suspension import Suspension
from threadline.agents.resolve import resolve
from threadline.billing.ledger import LedgerRepository
from threadline.billing.prices import Prices
from threadline.kit.clock import Clock
from threadline.kit.db import Conn, after_commit
from threadline.kit.errors import BadRequest, Conflict, NotFound, Reason
from threadline.kit.ids import new_id
from threadline.kit.metrics import RUNS_ENDED
from threadline.kit.pagination import CursorParams
from threadline.kit.signals import SignalBus
from threadline.messages.service import append_message
from threadline.organizations.repository import Organization
from threadline.runs import events, outbox
from threadline.runs.artifacts import Artifact, ArtifactRepository
from threadline.runs.claim import ClaimsAcrossOrganizations
from threadline.runs.events import RUN_COMPLETED, RUN_EVENTS, Event
from threadline.runs.repository import (
    Run,
    RunRepository,
    RunsAcrossOrganizations,
    Status,
)
from threadline.runs.unfinished import write_unfinished_messages
from threadline.settings.service import DEFAULT_MODEL
from threadline.threads import service as threads
from threadline.threads.repository import Thread, ThreadRepository

# Wakes executors: a run may have become claimable (payload: the run id, for logs only).
RUNS_QUEUED = "runs.queued"
# Tells the executing process to stop a run (payload: the run id).
RUN_CANCELLED = "runs.cancelled"

Strategy = Literal["reject", "enqueue", "interrupt"]


async def lock_thread(conn: Conn, organization_id: str, thread_id: str) -> None:
    if await ThreadRepository(conn, organization_id).get(thread_id, for_update=True) is None:
        raise NotFound(f"Thread {thread_id} was not found.")


_lock_thread = lock_thread


async def create_run(
    conn: Conn,
    signals: SignalBus,
    organization: Organization,
    thread_id: str,
    *,
    model: str | None,
    instructions: str | None,
    input: str | None,
    metadata: dict[str, str],
    prices: Prices,
    strategy: Strategy = "reject",
    automation_id: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    action_timeout_seconds: int | None = None,
    response_format: dict[str, Any] | None = None,
    agent_id: str | None = None,
    agent_version: int | None = None,
    now: datetime,
) -> Run:
    """The run's own fields (None: not given) over its agent version's (``agents.resolve``: 404 for an
    agent the organization cannot see), over the organization's settings."""
    fields = await resolve(
        conn,
        organization.id,
        agent_id=agent_id,
        agent_version=agent_version,
        model=model,
        instructions=instructions,
        tools=tools,
        action_timeout_seconds=action_timeout_seconds,
        response_format=response_format,
    )
    await _lock_thread(conn, organization.id, thread_id)
    if (
        organization.billing_enforced
        and (await LedgerRepository(conn, organization.id).balance()).balance <= 0
    ):
        raise Conflict(
            "The organization's credit balance is not positive and billingEnforced is on: an operator "
            "grants credits with `threadline billing grant`.",
            reason=Reason.INSUFFICIENT_CREDITS,
        )
    active = await RunRepository(conn, organization.id).active_of_thread(thread_id)
    if active and strategy == "reject":
        raise Conflict(
            f"Thread {thread_id} has an active run ({active[0].id}); wait for it to end, cancel it, or "
            "create the run with multitaskStrategy enqueue or interrupt.",
            reason=Reason.RUN_ACTIVE,
        )
    if strategy == "interrupt":
        for run in active:
            # Locked and read again: its executor may have committed events since the read above.
            locked = await RunRepository(conn, organization.id).get(run.id, for_update=True)
            if locked is not None and locked.is_active:
                await _end(conn, signals, prices, locked, "cancelled", None, now)
    run = Run(
        id=new_id("run"),
        organization_id=organization.id,
        thread_id=thread_id,
        status="queued",
        model=fields.model or organization.default_model or DEFAULT_MODEL,
        instructions=fields.instructions if fields.instructions is not None else organization.instructions,
        automation_id=automation_id,
        metadata=metadata,
        error_code=None,
        error_message=None,
        input_tokens=0,
        output_tokens=0,
        event_count=0,
        created_at=now,
        tools=fields.tools,
        action_timeout_seconds=fields.action_timeout_seconds,
        response_format=fields.response_format,
        agent_id=fields.agent_id,
        agent_version=fields.agent_version,
    )
    await RunRepository(conn, organization.id).insert(run)
    if input is not None:
        await append_message(
            conn, organization.id, thread_id, role="user", content=input, metadata={}, run_id=run.id, now=now
        )
    await RunsAcrossOrganizations(conn).refresh_active_run(thread_id)
    after_commit(conn, lambda: signals.publish(RUNS_QUEUED, run.id))
    return run


async def delete_thread_with_runs(
    conn: Conn, signals: SignalBus, prices: Prices, organization_id: str, thread_id: str, now: datetime
) -> Thread:
    """Deletes the thread with its messages and runs, cancelling its active runs first: each is charged
    for what it used and its streams end with ``run_completed``, as with any cancel. Here rather than in
    ``threads.service``, which knows nothing of runs."""
    await _lock_thread(conn, organization_id, thread_id)
    for run in await RunRepository(conn, organization_id).active_of_thread(thread_id):
        locked = await RunRepository(conn, organization_id).get(run.id, for_update=True)
        if locked is not None and locked.is_active:
            await _end(conn, signals, prices, locked, "cancelled", None, now)
    return await threads.delete_thread(conn, organization_id, thread_id)


@dataclass(frozen=True, slots=True)
class ThreadDeletionWithRuns:
    """``threads.service.ThreadDeletion``, as the composition root hands it to the thread endpoints."""

    signals: SignalBus
    prices: Prices
    clock: Clock

    async def __call__(self, conn: Conn, organization_id: str, thread_id: str) -> Thread:
        return await delete_thread_with_runs(
            conn, self.signals, self.prices, organization_id, thread_id, self.clock.now()
        )


async def get_run(conn: Conn, organization_id: str, run_id: str) -> Run:
    run = await RunRepository(conn, organization_id).get(run_id)
    if run is None:
        raise NotFound(f"Run {run_id} was not found.")
    return run


async def run_to_stream(
    conn: Conn, organization_id: str, run_id: str, position: str | None
) -> tuple[Run, int]:
    """The run ``GET /runs/{id}/stream`` follows and the event it resumes after (0: from the start); a
    resume ``position`` (an event's cursor) must be one of its own."""
    run = await get_run(conn, organization_id, run_id)
    cursor_run, after = _resume_point(position)
    if cursor_run not in (None, run.id):
        raise BadRequest(f"The cursor belongs to another run than {run.id}.", reason=Reason.INVALID_CURSOR)
    return run, after


async def run_to_follow(
    conn: Conn, organization_id: str, thread_id: str, position: str | None
) -> tuple[Run | None, int]:
    """The run a thread's stream follows and the event it resumes after: the run the resume ``position``
    came from, else the thread's active run (the running one, else the oldest queued one), else a replay
    of its latest; None when the thread has no run."""
    thread = await threads.get_thread(conn, organization_id, thread_id)
    cursor_run, after = _resume_point(position)
    runs = RunRepository(conn, organization_id)
    if cursor_run is not None:
        run = await runs.get(cursor_run)
        if run is None or run.thread_id != thread.id:
            raise BadRequest(
                f"The cursor belongs to no run of thread {thread.id}.", reason=Reason.INVALID_CURSOR
            )
        return run, after
    if thread.active_run_id is not None:
        return await runs.get(thread.active_run_id), after
    return await runs.latest_of_thread(thread.id), after


def _resume_point(position: str | None) -> tuple[str | None, int]:
    """The run a stream resumes and the event it resumes after; no run and 0 without a position."""
    return events.parse_cursor(position) if position else (None, 0)


async def list_artifacts(
    conn: Conn, organization_id: str, run_id: str, params: CursorParams
) -> tuple[Sequence[Artifact], str | None]:
    await get_run(conn, organization_id, run_id)
    return await ArtifactRepository(conn, organization_id).page_of_run(run_id, params)


async def get_artifact(conn: Conn, organization_id: str, artifact_id: str) -> Artifact:
    artifact = await ArtifactRepository(conn, organization_id).get(artifact_id)
    if artifact is None:
        raise NotFound(f"Artifact {artifact_id} was not found.")
    return artifact


async def list_runs(
    conn: Conn, organization_id: str, thread_id: str, params: CursorParams
) -> tuple[Sequence[Run], str | None]:
    if await ThreadRepository(conn, organization_id).get(thread_id) is None:
        raise NotFound(f"Thread {thread_id} was not found.")
    return await RunRepository(conn, organization_id).page_of_thread(thread_id, params)


async def cancel_run(
    conn: Conn, signals: SignalBus, prices: Prices, organization_id: str, run_id: str, *, now: datetime
) -> Run:
    """Ends the run at once, whether queued or running: its ``run_completed`` event is written here, and
    the executing process, told by a signal, stops the model; it can write nothing after this commit."""
    run = await get_run(conn, organization_id, run_id)
    await _lock_thread(conn, organization_id, run.thread_id)
    locked = await RunRepository(conn, organization_id).get(run_id, for_update=True)
    assert locked is not None  # the thread's lock keeps its runs (deletion cascades through it)
    if not locked.is_active:
        raise Conflict(f"Run {run_id} has already ended ({locked.status}).", reason=Reason.RUN_ENDED)
    return await _end(conn, signals, prices, locked, "cancelled", None, now)


async def end_run(
    conn: Conn,
    signals: SignalBus,
    prices: Prices,
    run_id: str,
    status: Status,
    error: tuple[str, str] | None,
    *,
    owner: str | None = None,
    expired_before: datetime | None = None,
    now: datetime,
) -> Run | None:
    """The executor's end of a running run (``owner`` still holds it) or the reaper's (its lease lapsed
    before ``expired_before``); None when the run is no longer what the caller thought (cancelled, taken)."""
    across = RunsAcrossOrganizations(conn)
    unlocked = await across.get(run_id)
    if unlocked is None:
        return None
    try:
        await _lock_thread(conn, unlocked.organization_id, unlocked.thread_id)
    except NotFound:  # deleted meanwhile, with its runs
        return None
    run = await across.get(run_id, for_update=True)
    if run is None or run.status != "running":
        return None
    if owner is not None and run.lease_owner != owner:
        return None
    if expired_before is not None and not await across.lease_lapsed(run_id, expired_before):
        return None
    return await _end(conn, signals, prices, run, status, error, now)


async def _end(
    conn: Conn,
    signals: SignalBus,
    prices: Prices,
    run: Run,
    status: Status,
    error: tuple[str, str] | None,
    now: datetime,
) -> Run:
    """Every end of a run comes here, once (the callers hold the run's lock and saw it active): its last
    events, its status, its thread's next active run, the messages it announced but had not written, and
    its one ledger debit commit together."""
    await write_unfinished_messages(conn, run, status, now)
    made: list[Event] = [
        _event(run, offset, "tool_call_complete", payload, now)
        for offset, payload in enumerate(_unanswered(run), start=1)
    ]
    if error is not None:
        made.append(_event(run, len(made) + 1, "error", {"code": error[0], "message": error[1]}, now))
    usage = {"inputTokens": run.input_tokens, "outputTokens": run.output_tokens}
    made.append(_event(run, len(made) + 1, RUN_COMPLETED, {"status": status, "usage": usage}, now))
    await events.EventRepository(conn, run.organization_id).insert(run.id, made)
    across = RunsAcrossOrganizations(conn)
    await across.set_status(run.id, status, at=now, error=error, events=len(made))
    await across.refresh_active_run(run.thread_id)
    await _charge(conn, prices, run, now)
    ended = replace(
        run,
        status=status,
        ended_at=now,
        event_count=run.event_count + len(made),
        error_code=error[0] if error else None,
        error_message=error[1] if error else None,
        lease_owner=None,
    )
    await outbox.record(conn, ended, outbox.ENDED[status], now)
    announcement = events.announcement(run.organization_id, run.id, made)

    async def announce() -> None:
        RUNS_ENDED.labels(status).inc()
        await signals.publish(RUN_EVENTS, announcement)
        if status == "cancelled":
            await signals.publish(RUN_CANCELLED, run.id)
        await signals.publish(RUNS_QUEUED, run.id)  # the thread's next queued run may start
        await signals.publish(outbox.OUTBOX_WRITTEN, run.id)

    after_commit(conn, announce)
    return ended


# Every end of a run passes through ``_end``; the wait's answers and expiry (runs.actions) end runs with it.
end_locked = _end


def _unanswered(run: Run) -> list[dict[str, Any]]:
    """A waiting run that ends (cancelled, expired): each call never answered completes ``isError``, so
    its events hold no call without its result."""
    waiting = run.status == "requires_action" or (run.status == "running" and run.lease_owner is None)
    if not waiting or run.agent_state is None:
        return []
    message = {"error": "unanswered", "reason": "The run ended before the call was answered."}
    return [
        {"toolCallId": c.id, "name": c.name, "result": message, "isError": True}
        for c in Suspension.decode(run.agent_state).unanswered()
    ]


async def _charge(conn: Conn, prices: Prices, run: Run, now: datetime) -> None:
    """One debit for a run that used tokens (usage is final here: nothing is recorded after the end)."""
    if run.input_tokens == 0 and run.output_tokens == 0:
        return
    amount = prices.charge(run.model, run.input_tokens, run.output_tokens)
    description = (
        f"Run {run.id} on {run.model}: {run.input_tokens} input and {run.output_tokens} output tokens."
    )
    await LedgerRepository(conn, run.organization_id).post(
        "debit", -amount, description, run_id=run.id, now=now
    )


def _event(run: Run, offset: int, type_: str, payload: dict[str, Any], at: datetime) -> Event:
    return events.render(run.id, run.thread_id, run.event_count + offset, type_, payload, at)


async def claim(
    conn: Conn, owner: str, now: datetime, lease_until: datetime, default_concurrency: int
) -> tuple[Run, list[Event]] | None:
    """The next claimable run (fairly across organizations, each within its run concurrency, whose
    default is ``default_concurrency``), now running and held by ``owner``, with its ``run_started``
    event written; a run continued after waiting for its caller (it has an ``agent_state``) has none."""
    run = await ClaimsAcrossOrganizations(conn).claim_next(owner, now, lease_until, default_concurrency)
    if run is None:
        return None
    if run.agent_state is not None:
        return run, []
    started = _event(run, 0, "run_started", {"model": run.model}, now)  # numbered by the claim
    await events.EventRepository(conn, run.organization_id).insert(run.id, [started])
    return run, [started]
