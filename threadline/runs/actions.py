"""Runs that wait for their caller: the one transition to ``requires_action``, the caller's answers
(``runs.submitToolOutputs``, ``runs.approve``), and the end of a wait that passed its ``expiresAt``.

A waiting run holds no task and no lease: its agent's state is on its row (``agent_state``), and an answer,
on any API process, writes the completed calls' ``tool_call_complete`` events and makes the run claimable
again (``running`` with no lease owner), so any executor continues it. Lock order as in ``runs.service``:
the thread, then the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from threadline.agent.suspension import ActionType, PendingCall, Suspension, parsed_arguments, rejected
from threadline.billing.prices import Prices
from threadline.kit.clock import isoformat
from threadline.kit.db import Conn, after_commit
from threadline.kit.errors import BadRequest, Conflict, Reason
from threadline.kit.signals import SignalBus
from threadline.runs import events, outbox
from threadline.runs.events import RUN_EVENTS, Event
from threadline.runs.repository import Run, RunRepository, RunsAcrossOrganizations
from threadline.runs.service import RUNS_QUEUED, end_locked, get_run, lock_thread
from threadline.runs.tables import runs

ACTION_EXPIRED = ("ACTION_EXPIRED", "The run waited for its caller past its expiresAt.")


@dataclass(frozen=True, slots=True)
class Decision:
    tool_call_id: str
    approve: bool
    reason: str | None


def required_action(kind: ActionType, calls: Sequence[PendingCall], expires_at: datetime) -> dict[str, Any]:
    return {
        "type": kind,
        "toolCalls": [
            {"id": c.id, "name": c.name, "arguments": parsed_arguments(c.arguments)} for c in calls
        ],
        "expiresAt": isoformat(expires_at),
    }


async def suspend_run(
    conn: Conn, signals: SignalBus, run_id: str, owner: str, suspension: Suspension, now: datetime
) -> Run | None:
    """The run's one transition to ``requires_action`` (a later outbox write belongs in this transaction):
    its ``run_requires_action`` event, its lease and slot given up, its agent's state kept. None when the
    run is no longer held by ``owner`` (cancelled meanwhile)."""
    waiting = suspension.waiting_for()
    assert waiting is not None, "a suspension waits for something"
    across = RunsAcrossOrganizations(conn)
    unlocked = await across.get(run_id)
    if unlocked is None:
        return None
    await lock_thread(conn, unlocked.organization_id, unlocked.thread_id)
    run = await across.get(run_id, for_update=True)
    if run is None or run.status != "running" or run.lease_owner != owner:
        return None
    expires_at = now + timedelta(seconds=run.action_timeout_seconds)
    action = required_action(*waiting, expires_at)
    made = [_event(run, 1, "run_requires_action", {"requiredAction": action}, now)]
    written = await _write(
        conn,
        signals,
        run,
        made,
        status="requires_action",
        lease_owner=None,
        lease_expires_at=None,
        required_action=action,
        action_expires_at=expires_at,
        agent_state=suspension.encode(),
    )
    await outbox.record(conn, written, outbox.REQUIRES_ACTION, now)
    after_commit(conn, lambda: signals.publish(outbox.OUTBOX_WRITTEN, run.id))
    return written


async def submit_tool_outputs(
    conn: Conn,
    signals: SignalBus,
    organization_id: str,
    run_id: str,
    outputs: Sequence[tuple[str, Any]],
    *,
    now: datetime,
) -> Run:
    run, state, pending = await _waiting(conn, organization_id, run_id, "submit_tool_outputs")
    answered = _match(pending, [tool_call_id for tool_call_id, _ in outputs])
    for tool_call_id, output in outputs:
        answered[tool_call_id].complete(output, False)
    return await _resume(conn, signals, run, state, [answered[i] for i, _ in outputs], now)


async def approve_tool_calls(
    conn: Conn,
    signals: SignalBus,
    organization_id: str,
    run_id: str,
    decisions: Sequence[Decision],
    *,
    now: datetime,
) -> Run:
    run, state, pending = await _waiting(conn, organization_id, run_id, "approve_tool_calls")
    decided = _match(pending, [d.tool_call_id for d in decisions])
    completed = []
    for decision in decisions:
        call = decided[decision.tool_call_id]
        call.approved = decision.approve
        if not decision.approve:
            call.complete(rejected(decision.reason), True)
            completed.append(call)
    return await _resume(conn, signals, run, state, completed, now)


async def expire(conn: Conn, signals: SignalBus, prices: Prices, run_id: str, now: datetime) -> Run | None:
    """Ends a run still waiting at its ``expiresAt`` ``failed`` (``ACTION_EXPIRED``); None if it was
    answered, cancelled or is not yet due."""
    unlocked = await RunsAcrossOrganizations(conn).get(run_id)
    if unlocked is None:
        return None
    await lock_thread(conn, unlocked.organization_id, unlocked.thread_id)
    run = await RunsAcrossOrganizations(conn).get(run_id, for_update=True)
    if run is None or run.status != "requires_action" or run.action_expires_at is None:
        return None
    if run.action_expires_at > now:
        return None
    return await end_locked(conn, signals, prices, run, "failed", ACTION_EXPIRED, now)


async def due(conn: Conn, now: datetime, limit: int = 100) -> list[str]:
    """Runs waiting past their ``expiresAt``, oldest first."""
    query = (
        sa.select(runs.c.id)
        .where(runs.c.status == "requires_action", runs.c.action_expires_at <= now)
        .order_by(runs.c.id)
        .limit(limit)
    )
    return list((await conn.execute(query)).scalars())


async def _waiting(
    conn: Conn, organization_id: str, run_id: str, kind: ActionType
) -> tuple[Run, Suspension, list[PendingCall]]:
    run = await get_run(conn, organization_id, run_id)
    await lock_thread(conn, organization_id, run.thread_id)
    locked = await RunRepository(conn, organization_id).get(run_id, for_update=True)
    assert locked is not None  # the thread's lock keeps its runs
    action = locked.required_action or {}
    if locked.status != "requires_action" or locked.agent_state is None or action.get("type") != kind:
        now = (
            f"waits for {action.get('type')}" if locked.status == "requires_action" else f"is {locked.status}"
        )
        raise Conflict(f"Run {run_id} is not waiting for {kind}: it {now}.", reason=Reason.RUN_NOT_WAITING)
    state = Suspension.decode(locked.agent_state)
    waiting = state.waiting_for()
    assert waiting is not None
    assert waiting[0] == kind
    return locked, state, waiting[1]


def _match(pending: Sequence[PendingCall], ids: Sequence[str]) -> dict[str, PendingCall]:
    """The pending calls the request answers, by id: every one of them, once, and only them."""
    by_id = {c.id: c for c in pending}
    seen: set[str] = set()
    for tool_call_id in ids:
        if tool_call_id not in by_id or tool_call_id in seen:
            again = " twice" if tool_call_id in seen else ""
            raise BadRequest(
                f"Tool call {tool_call_id!r} is not pending on this run{again}; pending: {', '.join(by_id)}.",
                reason=Reason.UNKNOWN_TOOL_CALL,
            )
        seen.add(tool_call_id)
    missing = [c.id for c in pending if c.id not in seen]
    if missing:
        raise BadRequest(
            "Every pending tool call must be answered in one request.",
            reason=Reason.TOOL_OUTPUTS_INCOMPLETE,
            missing_context=missing,
        )
    return by_id


async def _resume(
    conn: Conn,
    signals: SignalBus,
    run: Run,
    state: Suspension,
    completed: Sequence[PendingCall],
    now: datetime,
) -> Run:
    """The answered calls' ``tool_call_complete`` events, and the run claimable again by any executor."""
    made = [
        _event(run, i, "tool_call_complete", _completion(call), now)
        for i, call in enumerate(completed, start=1)
    ]
    return await _write(
        conn,
        signals,
        run,
        made,
        status="running",
        required_action=None,
        action_expires_at=None,
        agent_state=state.encode(),
    )


async def _write(conn: Conn, signals: SignalBus, run: Run, made: list[Event], **values: Any) -> Run:
    """A waiting run's change of state with its events, its thread's active run, and their announcement:
    written in the run's own organization (the caller locked the run, by the request's scope or by id)."""
    scoped = RunRepository(conn, run.organization_id)
    await conn.execute(
        runs.update()
        .where(runs.c.id == run.id, runs.c.organization_id == run.organization_id)
        .values(event_count=run.event_count + len(made), **values)
    )
    await events.EventRepository(conn, run.organization_id).insert(run.id, made)
    await scoped.refresh_active_run(run.thread_id)
    _announce(conn, signals, run, made)
    written = await scoped.get(run.id)
    assert written is not None
    return written


def _completion(call: PendingCall) -> dict[str, Any]:
    return {"toolCallId": call.id, "name": call.name, "result": call.result, "isError": call.is_error}


def _event(run: Run, offset: int, type_: str, payload: dict[str, Any], at: datetime) -> Event:
    return events.render(run.id, run.thread_id, run.event_count + offset, type_, payload, at)


def _announce(conn: Conn, signals: SignalBus, run: Run, made: list[Event]) -> None:
    announcement = events.announcement(run.organization_id, run.id, made)

    async def publish() -> None:
        if made:
            await signals.publish(RUN_EVENTS, announcement)
        await signals.publish(RUNS_QUEUED, run.id)  # a slot was freed, or the run may be claimed again

    after_commit(conn, publish)
