"""Automation rules: references checked on write, the next due time kept, and firings.

A firing creates its run (on the configured thread, queued behind its active run, or on a new thread
named after the automation) and marks the automation (``lastTriggeredAt``, ``nextRunAt``) in one
transaction that first row-locks the automation. Two processes firing the same automation therefore take
turns, and the second finds the schedule no longer due, or the cooldown running: a tick fires exactly once
however many schedulers race for it. A firing that cannot start its run (its thread was deleted, credits
ran out) leaves the error on the automation instead (``lastError``) and counts as fired, so it is not
retried every second.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal

from threadline.agents.resolve import resolve
from threadline.automations.repository import Automation, AutomationRepository, AutomationsAcrossOrganizations
from threadline.automations.schedule import next_time
from threadline.automations.schemas import ActionIn, AutomationCreate, TriggerIn
from threadline.billing.prices import Prices
from threadline.config import Settings
from threadline.kit.db import Conn, after_commit
from threadline.kit.errors import ApiError, Conflict, NotFound, Reason
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams
from threadline.kit.signals import SignalBus
from threadline.organizations.repository import OrganizationRepository
from threadline.projects.repository import ProjectRepository
from threadline.runs.repository import Run, RunRepository
from threadline.runs.service import create_run
from threadline.threads.repository import ThreadRepository
from threadline.threads.service import create_thread

Changed = Callable[[], Awaitable[None]]
Firing = Literal["schedule", "log", "manual"]
# A log record in a run's input is cut to this (a record may be 1 MiB; a message at most 256 KiB).
MAX_RECORD_CHARS = 16_384


async def create_automation(
    conn: Conn,
    organization_id: str,
    body: AutomationCreate,
    *,
    now: datetime,
    changed: Changed,
    settings: Settings,
) -> Automation:
    """Refused (409 ``AUTOMATION_LIMIT``) when the organization holds its limit already: counted under its
    row's lock, so concurrent creations cannot pass it together."""
    organization = await OrganizationRepository(conn).get(organization_id, lock=True)
    assert organization is not None  # the caller's own organization
    limit = organization.limits(settings).automations
    if await AutomationRepository(conn, organization_id).count() >= limit:
        raise Conflict(
            f"The organization holds {limit} automations, its limit: delete one first, or ask an operator "
            "to raise it (`threadline orgs set-limit --automations N`).",
            reason=Reason.AUTOMATION_LIMIT,
        )
    await _check_references(conn, organization_id, body.trigger, body.action)
    trigger = body.trigger.stored()
    automation = Automation(
        id=new_id("aut"),
        organization_id=organization_id,
        name=body.name,
        enabled=body.enabled,
        trigger=trigger,
        action=body.action.stored(),
        next_run_at=_next_run(trigger, body.enabled, now),
        last_triggered_at=None,
        last_error=None,
        created_at=now,
        updated_at=now,
    )
    await AutomationRepository(conn, organization_id).insert(automation)
    after_commit(conn, changed)
    return automation


async def get_automation(
    conn: Conn, organization_id: str, automation_id: str, *, lock: bool = False
) -> Automation:
    automation = await AutomationRepository(conn, organization_id).get(automation_id, lock=lock)
    if automation is None:
        raise NotFound(f"Automation {automation_id} was not found.")
    return automation


async def list_automations(
    conn: Conn, organization_id: str, params: CursorParams
) -> tuple[Sequence[Automation], str | None]:
    return await AutomationRepository(conn, organization_id).page(params)


async def list_runs(
    conn: Conn, organization_id: str, automation_id: str, params: CursorParams
) -> tuple[Sequence[Run], str | None]:
    """The runs the automation started, newest first (by its trigger or by hand)."""
    await get_automation(conn, organization_id, automation_id)
    return await RunRepository(conn, organization_id).page_of_automation(automation_id, params)


async def update_automation(
    conn: Conn,
    organization_id: str,
    automation_id: str,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    changed: Changed,
) -> Automation:
    """``changes``: the fields the client sent (validated models for ``trigger`` and ``action``)."""
    current = await get_automation(conn, organization_id, automation_id, lock=True)
    trigger_in: TriggerIn | None = changes.get("trigger")
    action_in: ActionIn | None = changes.get("action")
    await _check_references(conn, organization_id, trigger_in, action_in)
    updated = replace(
        current,
        name=changes.get("name") or current.name,
        enabled=current.enabled if changes.get("enabled") is None else bool(changes["enabled"]),
        trigger=trigger_in.stored() if trigger_in else current.trigger,
        action=action_in.stored() if action_in else current.action,
        updated_at=now,
    )
    if updated.trigger != current.trigger or updated.enabled != current.enabled:
        # From now: ticks missed while disabled are not made up when enabled again.
        updated = replace(updated, next_run_at=_next_run(updated.trigger, updated.enabled, now))
    await AutomationRepository(conn, organization_id).save(updated)
    after_commit(conn, changed)
    return updated


async def delete_automation(
    conn: Conn, organization_id: str, automation_id: str, *, changed: Changed
) -> Automation:
    automation = await get_automation(conn, organization_id, automation_id, lock=True)
    await AutomationRepository(conn, organization_id).delete(automation_id)
    after_commit(conn, changed)
    return automation


async def trigger_now(
    conn: Conn,
    signals: SignalBus,
    prices: Prices,
    organization_id: str,
    automation_id: str,
    *,
    now: datetime,
    settings: Settings,
) -> Run:
    """A firing by hand (``POST /automations/{id}/trigger``): enabled or not, cooldown or not; its errors
    are the request's. The schedule keeps its next time."""
    automation = await get_automation(conn, organization_id, automation_id, lock=True)
    run = await _start_run(conn, signals, prices, automation, "manual", None, settings, now)
    await AutomationRepository(conn, organization_id).record_firing(
        automation.id, at=now, next_run_at=automation.next_run_at, error=None
    )
    return run


async def fire_schedule(
    conn: Conn, signals: SignalBus, prices: Prices, automation_id: str, *, now: datetime, settings: Settings
) -> Run | None:
    """The schedule's firing if it is (still) due at ``now``; None if another scheduler took it first.
    However many ticks were missed, it fires once and is next due after ``now``. ``now`` is the moment of
    the firing itself (``lastTriggeredAt``), not of the tick that found it due."""
    across = AutomationsAcrossOrganizations(conn)
    automation = await across.get(automation_id, lock=True)
    if automation is None or not _is_due(automation, now):
        return None
    run = await _start_run(conn, signals, prices, automation, "schedule", None, settings, now)
    await across.record_firing(
        automation.id, at=now, next_run_at=_next_run(automation.trigger, True, now), error=None
    )
    return run


async def fire_log(
    conn: Conn, signals: SignalBus, prices: Prices, automation_id: str, *, now: datetime, settings: Settings
) -> tuple[Run | None, datetime | None]:
    """Settles the firing owed to the automation (``repository.owe_firings``), if one still is: a run
    with the matching record, unless the automation is disabled or cooling down (then the firing is
    dropped). With the run, when the automation last fired as of this transaction (for the caller's own
    cooldown estimate)."""
    across = AutomationsAcrossOrganizations(conn)
    automation = await across.get(automation_id, lock=True)
    if automation is None:
        return None, None
    record = await across.take_firing(automation_id)
    if record is None or not _may_fire_on_log(automation, now):
        return None, automation.last_triggered_at
    run = await _start_run(conn, signals, prices, automation, "log", record, settings, now)
    await across.record_firing(automation.id, at=now, next_run_at=None, error=None)
    return run, now


async def firing_failed(
    conn: Conn, automation_id: str, kind: Firing, error: ApiError, *, now: datetime
) -> bool:
    """Leaves ``error`` on the automation, in a transaction of its own (the firing's rolled back), and
    counts the firing as done: a schedule moves to its next time, a log trigger's cooldown starts (and
    its firing is no longer owed). False when the automation changed meanwhile (deleted, disabled, fired
    by another process)."""
    across = AutomationsAcrossOrganizations(conn)
    automation = await across.get(automation_id, lock=True)
    if automation is None:
        return False
    if kind == "schedule" and not _is_due(automation, now):
        return False
    if kind == "log" and (
        await across.take_firing(automation_id) is None or not _may_fire_on_log(automation, now)
    ):
        return False
    next_run_at = _next_run(automation.trigger, True, now) if kind == "schedule" else None
    code = error.reason or error.code
    await across.record_firing(
        automation.id, at=now, next_run_at=next_run_at, error={"code": code, "message": error.message}
    )
    return True


def _is_due(automation: Automation, now: datetime) -> bool:
    return (
        automation.enabled
        and automation.trigger_type == "schedule"
        and automation.next_run_at is not None
        and automation.next_run_at <= now
    )


def _may_fire_on_log(automation: Automation, now: datetime) -> bool:
    if not automation.enabled or automation.trigger_type != "log":
        return False
    last = automation.last_triggered_at
    return last is None or now >= last + timedelta(seconds=int(automation.trigger["cooldownSeconds"]))


def _next_run(trigger: Mapping[str, Any], enabled: bool, now: datetime) -> datetime | None:
    if not enabled or trigger["type"] != "schedule":
        return None
    return next_time(str(trigger["cron"]), str(trigger["timezone"]), now)


async def _start_run(
    conn: Conn,
    signals: SignalBus,
    prices: Prices,
    automation: Automation,
    kind: Firing,
    record: Mapping[str, Any] | None,
    settings: Settings,
    now: datetime,
) -> Run:
    """Not while the organization has its limit of runs queued (409 ``QUEUED_RUN_LIMIT``): a firing then
    fails as one whose thread is gone does, and the schedule moves on, rather than piling runs (and
    threads) up faster than they execute."""
    organization = await OrganizationRepository(conn).get(automation.organization_id, lock=True)
    assert organization is not None  # the automation goes with its organization
    limit = organization.limits(settings).queued_runs
    if await AutomationRepository(conn, organization.id).queued_runs(limit) >= limit:
        raise Conflict(
            f"The organization has {limit} runs queued, its limit for an automation to start another; "
            "the firing was skipped (an operator may raise it: `threadline orgs set-limit --queued-runs N`).",
            reason=Reason.QUEUED_RUN_LIMIT,
        )
    thread_id: str | None = automation.action["threadId"]
    if thread_id is None:
        thread = await create_thread(
            conn, organization.id, title=automation.name, metadata={"automationId": automation.id}, now=now
        )
        thread_id = thread.id
    elif await ThreadRepository(conn, organization.id).get(thread_id) is None:
        raise Conflict(
            f"The automation's thread {thread_id} no longer exists; set action.threadId to another thread "
            "or to null (a new thread per firing).",
            reason=Reason.THREAD_NOT_FOUND,
        )
    return await create_run(
        conn,
        signals,
        organization,
        thread_id,
        model=automation.action["model"],
        instructions=None,
        input=_input(str(automation.action["prompt"]), record),
        metadata={"trigger": kind},
        prices=prices,
        strategy="enqueue",
        automation_id=automation.id,
        agent_id=automation.action.get("agentId"),
        agent_version=automation.action.get("agentVersion"),
        response_format=automation.action.get("responseFormat"),
        now=now,
    )


def _input(prompt: str, record: Mapping[str, Any] | None) -> str:
    if record is None:
        return prompt
    text = json.dumps(record, ensure_ascii=False, indent=2, default=str)
    if len(text) > MAX_RECORD_CHARS:
        text = text[:MAX_RECORD_CHARS] + "\n… (cut: the whole record is in the logs, by its id)"
    return f"{prompt}\n\nThe log record that triggered this run:\n```json\n{text}\n```"


async def _check_references(
    conn: Conn, organization_id: str, trigger: TriggerIn | None, action: ActionIn | None
) -> None:
    """A project, thread or agent (and its version) named in the body must be the organization's (404);
    ``agentVersion`` needs ``agentId`` (400)."""
    project_id = trigger.project_id if trigger else None
    if project_id and await ProjectRepository(conn, organization_id).get(project_id) is None:
        raise NotFound(f"trigger.projectId: project {project_id} was not found.")
    thread_id = action.thread_id if action else None
    if thread_id and await ThreadRepository(conn, organization_id).get(thread_id) is None:
        raise NotFound(f"action.threadId: thread {thread_id} was not found.")
    if action is not None and (action.agent_id is not None or action.agent_version is not None):
        await resolve(
            conn,
            organization_id,
            agent_id=action.agent_id,
            agent_version=action.agent_version,
            model=None,
            instructions=None,
            tools=None,
            action_timeout_seconds=None,
        )
