"""Automations over HTTP."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.automations import service
from threadline.automations.schemas import AutomationCreate, AutomationOut, AutomationUpdate
from threadline.automations.triggers import LogTriggers
from threadline.billing.prices import Prices
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.kit.signals import SignalBus
from threadline.runs.schemas import RunOut


class AutomationServices(Protocol):
    """What the automation handlers read from the process's services."""

    settings: Settings
    clock: Clock
    log_triggers: LogTriggers
    prices: Prices
    signals: SignalBus


ServicesDep = Annotated[AutomationServices, Depends(get_services)]

router = APIRouter(prefix="/v1/automations", tags=["automations"])


@router.get(
    "",
    operation_id="automations.list",
    response_model=CursorPage[AutomationOut],
    responses=errors(400, *AUTHENTICATED),
)
async def list_automations(request: Request, conn: ConnDep, page: CursorDep) -> CursorPage[AutomationOut]:
    """The organization's automations, newest first."""
    found, next_cursor = await service.list_automations(conn, principal_of(request).organization_id, page)
    return CursorPage(data=[AutomationOut.of(a) for a in found], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="automations.create",
    status_code=201,
    response_model=AutomationOut,
    responses=errors(400, 404, 409, 413, *AUTHENTICATED),
)
async def create_automation(
    body: AutomationCreate, request: Request, conn: ConnDep, services: ServicesDep
) -> AutomationOut:
    """A schedule (`{"type": "schedule", "cron", "timezone"}`) or a log trigger (`{"type": "log",
    "projectId", "level", "contains", "cooldownSeconds"}`) that starts a run with `action.prompt`.
    A project or thread it names must exist (404 naming the field). An organization holds at most 100
    automations unless an operator set its own limit: one more is 409 `AUTOMATION_LIMIT`."""
    automation = await service.create_automation(
        conn,
        principal_of(request).organization_id,
        body,
        now=services.clock.now(),
        changed=services.log_triggers.changed,
        settings=services.settings,
    )
    return AutomationOut.of(automation)


@router.get(
    "/{automationId}",
    operation_id="automations.get",
    response_model=AutomationOut,
    responses=errors(404, *AUTHENTICATED),
)
async def get_automation(automationId: str, request: Request, conn: ConnDep) -> AutomationOut:
    automation = await service.get_automation(conn, principal_of(request).organization_id, automationId)
    return AutomationOut.of(automation)


@router.patch(
    "/{automationId}",
    operation_id="automations.update",
    response_model=AutomationOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def update_automation(
    automationId: str, body: AutomationUpdate, request: Request, conn: ConnDep, services: ServicesDep
) -> AutomationOut:
    """Replaces the fields sent (`trigger` and `action` as whole objects). A new trigger, or enabling
    it again, schedules from now: ticks missed while disabled are not made up."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    nulls = sorted(name for name, value in changes.items() if value is None)
    if nulls:
        raise BadRequest(f"{', '.join(nulls)} cannot be null.", reason=Reason.VALIDATION_FAILED)
    automation = await service.update_automation(
        conn,
        principal_of(request).organization_id,
        automationId,
        changes,
        now=services.clock.now(),
        changed=services.log_triggers.changed,
    )
    return AutomationOut.of(automation)


@router.delete(
    "/{automationId}",
    operation_id="automations.delete",
    response_model=AutomationOut,
    responses=errors(404, *AUTHENTICATED),
)
async def delete_automation(
    automationId: str, request: Request, conn: ConnDep, services: ServicesDep
) -> AutomationOut:
    """Deletes the automation; the runs it started stay (their `automationId` keeps its id)."""
    automation = await service.delete_automation(
        conn, principal_of(request).organization_id, automationId, changed=services.log_triggers.changed
    )
    return AutomationOut.of(automation)


@router.post(
    "/{automationId}/trigger",
    operation_id="automations.trigger",
    status_code=201,
    response_model=RunOut,
    responses=errors(404, 409, *AUTHENTICATED),
)
async def trigger_automation(
    automationId: str, request: Request, conn: ConnDep, services: ServicesDep
) -> RunOut:
    """Fires the automation now, enabled or not and whatever its cooldown; answers with the run it
    started. 409 `THREAD_NOT_FOUND` if its thread was deleted, `INSUFFICIENT_CREDITS` under billing,
    `QUEUED_RUN_LIMIT` while the organization has its limit of runs queued (100 unless an operator set
    its own)."""
    run = await service.trigger_now(
        conn,
        services.signals,
        services.prices,
        principal_of(request).organization_id,
        automationId,
        now=services.clock.now(),
        settings=services.settings,
    )
    return RunOut.of(run)
