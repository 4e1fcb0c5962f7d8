"""``/automations``: each automation with its trigger in words, the enabled switch, "Run now", the create
and edit form, and the runs an automation started. Every change goes through the services the
``/v1/automations`` endpoints call, in the viewer's organization; another organization's id is the 404
page."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from threadline.agent.response_format import stored_format
from threadline.automations import service
from threadline.automations.describe import describe_cooldown, describe_trigger
from threadline.automations.repository import Automation
from threadline.automations.triggers import LogTriggers
from threadline.billing.prices import Prices
from threadline.config import Settings
from threadline.dashboard.pages.automation_form import AutomationForm, timezones
from threadline.dashboard.sessions import Viewer
from threadline.dashboard.web import ViewerDep, is_htmx, render
from threadline.kit.clock import Clock
from threadline.kit.db import Conn, Database
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.errors import ApiError
from threadline.kit.pagination import CursorParams, cursor_params
from threadline.kit.signals import SignalBus
from threadline.projects.repository import Project
from threadline.projects.service import list_projects
from threadline.telemetry.schemas import LEVELS


class AutomationPageServices(Protocol):
    """What the automations pages read from the process's services."""

    settings: Settings
    db: Database
    clock: Clock
    log_triggers: LogTriggers
    prices: Prices
    signals: SignalBus


ServicesDep = Annotated[AutomationPageServices, Depends(get_services)]
# A bad ``?cursor=`` is the API's 400 (``INVALID_CURSOR``), shown as the error page.
PageDep = Annotated[CursorParams, Depends(cursor_params)]

router = APIRouter()

# The projects offered for a log trigger: the newest page of them (an older one can be set by the API).
_PROJECT_CHOICES = CursorParams(limit=100, after_id=None)
_FIRST_RUNS = CursorParams(limit=20, after_id=None)
_RUN_ID = re.compile(r"^run_[0-9a-z]{26}$")


@router.get("/automations")
async def list_page(request: Request, viewer: ViewerDep, conn: ConnDep, page: PageDep) -> Response:
    found, next_cursor = await service.list_automations(conn, viewer.organization_id, page)
    projects = await _projects(conn, viewer)
    return render(
        request,
        "automations/list.html",
        viewer,
        title="Automations",
        automations=[_row(a, projects) for a in found],
        next_cursor=next_cursor,
        first_page=page.after_id is None,
    )


@router.get("/automations/new")
async def new_page(request: Request, viewer: ViewerDep, conn: ConnDep) -> Response:
    return await _form_page(request, viewer, conn, AutomationForm.blank(), None)


@router.post("/automations/new")
async def create(request: Request, viewer: ViewerDep, services: ServicesDep) -> Response:
    return await _save(request, viewer, services, None)


@router.get("/automations/{automation_id}")
async def detail_page(
    request: Request,
    automation_id: str,
    viewer: ViewerDep,
    conn: ConnDep,
    page: PageDep,
    started: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    started = started if started and _RUN_ID.match(started) else None
    return await _detail(request, viewer, conn, automation_id, page, started=started)


@router.get("/automations/{automation_id}/runs")
async def runs_fragment(request: Request, automation_id: str, viewer: ViewerDep, conn: ConnDep) -> Response:
    """The newest runs, which the automation's page fetches again every few seconds (htmx) so a firing
    shows without a reload; without htmx, the page itself."""
    if not is_htmx(request):
        return RedirectResponse(f"/automations/{automation_id}", status_code=303)
    automation = await service.get_automation(conn, viewer.organization_id, automation_id)
    runs, next_cursor = await service.list_runs(conn, viewer.organization_id, automation_id, _FIRST_RUNS)
    return render(
        request,
        "automations/runs.html",
        viewer,
        automation=automation,
        runs=runs,
        next_cursor=next_cursor,
        first_page=True,
    )


@router.get("/automations/{automation_id}/edit")
async def edit_page(request: Request, automation_id: str, viewer: ViewerDep, conn: ConnDep) -> Response:
    automation = await service.get_automation(conn, viewer.organization_id, automation_id)
    return await _form_page(request, viewer, conn, AutomationForm.of(automation), automation)


@router.post("/automations/{automation_id}/edit")
async def update(request: Request, automation_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    async with services.db.transaction(write=False) as conn:
        automation = await service.get_automation(conn, viewer.organization_id, automation_id)
    return await _save(request, viewer, services, automation)


@router.post("/automations/{automation_id}/enabled")
async def set_enabled(
    request: Request, automation_id: str, viewer: ViewerDep, conn: ConnDep, services: ServicesDep
) -> Response:
    """The switch: the form says the state wanted (``enabled``: "true" or "false"), so a double submit
    leaves it as the person asked rather than flipping it back."""
    form = await request.form()
    await service.update_automation(
        conn,
        viewer.organization_id,
        automation_id,
        {"enabled": form.get("enabled") == "true"},
        now=services.clock.now(),
        changed=services.log_triggers.changed,
    )
    return RedirectResponse(_back(form.get("back"), automation_id), status_code=303)


@router.post("/automations/{automation_id}/run")
async def run_now(request: Request, automation_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    """As ``POST /v1/automations/{id}/trigger``. A refusal (its thread deleted, credits spent) is shown
    on the automation's page; the firing's own transaction has rolled back by then."""
    try:
        async with services.db.transaction(write=True) as conn:
            run = await service.trigger_now(
                conn,
                services.signals,
                services.prices,
                viewer.organization_id,
                automation_id,
                now=services.clock.now(),
                settings=services.settings,
            )
    except ApiError as error:
        if error.status_code == 404:
            raise
        async with services.db.transaction(write=False) as conn:
            return await _detail(
                request,
                viewer,
                conn,
                automation_id,
                _FIRST_RUNS,
                refusal=error.message,
                status_code=error.status_code,
            )
    return RedirectResponse(f"/automations/{automation_id}?started={run.id}", status_code=303)


@router.post("/automations/{automation_id}/delete")
async def delete(automation_id: str, viewer: ViewerDep, conn: ConnDep, services: ServicesDep) -> Response:
    await service.delete_automation(
        conn, viewer.organization_id, automation_id, changed=services.log_triggers.changed
    )
    return RedirectResponse("/automations", status_code=303)


async def _save(
    request: Request, viewer: Viewer, services: AutomationPageServices, automation: Automation | None
) -> Response:
    """Creates the automation (``automation`` None) or replaces every field of it with the form's, by
    the API's rules; the form again with the problems at their fields when they refuse it."""
    form = AutomationForm.posted(await request.form())
    body = form.validated()
    if body is not None:
        try:
            async with services.db.transaction(write=True) as conn:
                now, changed = services.clock.now(), services.log_triggers.changed
                if automation is None:
                    saved = await service.create_automation(
                        conn,
                        viewer.organization_id,
                        body,
                        now=now,
                        changed=changed,
                        settings=services.settings,
                    )
                else:
                    changes = {name: getattr(body, name) for name in ("name", "enabled", "trigger", "action")}
                    # The form has no field for it: an edit keeps the automation's responseFormat.
                    kept = stored_format(automation.action.get("responseFormat"))
                    changes["action"] = body.action.model_copy(update={"response_format": kept})
                    saved = await service.update_automation(
                        conn, viewer.organization_id, automation.id, changes, now=now, changed=changed
                    )
        except ApiError as error:
            if not form.refused(error):
                raise
        else:
            return RedirectResponse(f"/automations/{saved.id}", status_code=303)
    async with services.db.transaction(write=False) as conn:
        return await _form_page(request, viewer, conn, form, automation, status_code=400)


def _back(value: object, automation_id: str) -> str:
    """Back to the list or to the automation's page, whichever the switch was on; nowhere else."""
    page = f"/automations/{automation_id}"
    return page if value == page else "/automations"


async def _projects(conn: Conn, viewer: Viewer) -> Sequence[Project]:
    found, _ = await list_projects(conn, viewer.organization_id, _PROJECT_CHOICES)
    return found


def _row(automation: Automation, projects: Sequence[Project]) -> dict[str, object]:
    """An automation with its trigger in words (a log trigger's project by name, when known)."""
    names = {p.id: p.name for p in projects}
    trigger = automation.trigger
    project_name = names.get(trigger.get("projectId") or "")
    cooldown = describe_cooldown(int(trigger["cooldownSeconds"])) if trigger["type"] == "log" else None
    return {
        "automation": automation,
        "trigger_words": describe_trigger(trigger, project_name),
        "cooldown_words": cooldown,
    }


async def _detail(
    request: Request,
    viewer: Viewer,
    conn: Conn,
    automation_id: str,
    page: CursorParams,
    *,
    started: str | None = None,
    refusal: str | None = None,
    status_code: int = 200,
) -> Response:
    automation = await service.get_automation(conn, viewer.organization_id, automation_id)
    runs, next_cursor = await service.list_runs(conn, viewer.organization_id, automation_id, page)
    return render(
        request,
        "automations/detail.html",
        viewer,
        status_code=status_code,
        title=automation.name,
        automation=automation,
        row=_row(automation, await _projects(conn, viewer)),
        runs=runs,
        next_cursor=next_cursor,
        first_page=page.after_id is None,
        started=started,
        refusal=refusal,
    )


async def _form_page(
    request: Request,
    viewer: Viewer,
    conn: Conn,
    form: AutomationForm,
    automation: Automation | None,
    *,
    status_code: int = 200,
) -> Response:
    return render(
        request,
        "automations/form.html",
        viewer,
        status_code=status_code,
        title=f"Edit {automation.name}" if automation else "New automation",
        automation=automation,
        form=form,
        projects=await _projects(conn, viewer),
        levels=LEVELS,
        timezones=timezones(),
    )
