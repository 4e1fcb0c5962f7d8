"""``/agents``: the organization's agents, saving one, and an agent's page: editing it (which saves a new
version), its versions side by side with what each changed, and starting a run on a thread with it.

The forms are checked by the API's own schemas (``agents.schemas``), so the page and ``/v1/agents`` refuse
the same values for the same reasons; every change answers with a redirect (POST, then GET)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from threadline.agents import service
from threadline.agents.repository import Agent
from threadline.agents.schemas import AgentCreate, AgentUpdate
from threadline.dashboard.forms import FieldErrors, error_of, validate
from threadline.dashboard.pages.threads import ServicesDep, start_run_on
from threadline.dashboard.sessions import Viewer
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.db import Conn, Database
from threadline.kit.deps import ConnDep, CursorDep
from threadline.kit.errors import ApiError
from threadline.kit.pagination import CursorParams
from threadline.threads.fast_list import list_page

PATH = "/agents"
# The versions shown side by side on an agent's page, and the threads its run form offers.
VERSIONS_SHOWN = CursorParams(8, None)
THREAD_CHOICES = CursorParams(50, None)
_FIELDS = {
    "name": "name",
    "model": "model",
    "instructions": "instructions",
    "tools": "tools",
    "responseFormat": "response_format",
    "actionTimeoutSeconds": "action_timeout",
}
# What the versions table compares, in its order: (label, the agent's attribute).
COMPARED = [
    ("Name", "name"),
    ("Model", "model"),
    ("Instructions", "instructions"),
    ("Tools", "tools"),
    ("Response format", "response_format"),
    ("Action timeout", "action_timeout_seconds"),
]
_TEXT = Form(max_length=10_000)
_LONG = Form(max_length=300_000)

router = APIRouter()


@dataclass
class AgentForm:
    """The agent form as last sent (or as the agent is, to edit it)."""

    name: str = ""
    model: str = ""
    instructions: str = ""
    tools: str = ""
    response_format: str = ""
    action_timeout: str = ""
    errors: FieldErrors = field(default_factory=dict)

    @classmethod
    def of(cls, agent: Agent) -> AgentForm:
        return cls(
            name=agent.name,
            model=agent.model or "",
            instructions=agent.instructions or "",
            tools=shown(agent.tools),
            response_format=shown(agent.response_format),
            action_timeout="" if agent.action_timeout_seconds is None else str(agent.action_timeout_seconds),
        )

    def body(self) -> dict[str, Any]:
        """The form as the API's body (empty fields: null, the default); JSON that does not parse is an
        error at its field."""
        body: dict[str, Any] = {
            "name": self.name,
            "model": self.model.strip() or None,
            "instructions": self.instructions or None,
            "actionTimeoutSeconds": _integer(self.action_timeout),
        }
        for name, text in (("tools", self.tools), ("responseFormat", self.response_format)):
            try:
                body[name] = json.loads(text) if text.strip() else None
            except ValueError as exc:
                self.errors[_FIELDS[name]] = f"Not JSON: {exc}."
        return body


def shown(value: Any) -> str:
    """A JSON field as the form and the versions table show it ("" for null)."""
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def _integer(text: str) -> int | str | None:
    if not text.strip():
        return None
    try:
        return int(text)
    except ValueError:
        return text  # refused by the schema, in its words


def changes_of(versions: list[Agent]) -> list[set[str]]:
    """For each version (newest first), the attributes it changed from the version before it."""
    return [
        {attr for _, attr in COMPARED if getattr(version, attr) != getattr(older, attr)}
        if (older := next((v for v in versions if v.version == version.version - 1), None))
        else set()
        for version in versions
    ]


@router.get(PATH)
async def agents_page(request: Request, viewer: ViewerDep, conn: ConnDep, page: CursorDep) -> Response:
    return await _list_page(request, viewer, conn, page, AgentForm())


async def _list_page(
    request: Request, viewer: Viewer, conn: Conn, page: CursorParams, form: AgentForm, status_code: int = 200
) -> Response:
    found, next_cursor = await service.list_agents(conn, viewer.organization_id, page)
    return render(
        request,
        "agents/index.html",
        viewer,
        status_code=status_code,
        agents=found,
        next_cursor=next_cursor,
        paged=page.after_id is not None,
        form=form,
    )


@router.post(PATH)
async def create_agent(
    request: Request,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    name: Annotated[str, _TEXT] = "",
    model: Annotated[str, _TEXT] = "",
    instructions: Annotated[str, _LONG] = "",
    tools: Annotated[str, _LONG] = "",
    response_format: Annotated[str, _LONG] = "",
    action_timeout: Annotated[str, Form(max_length=40)] = "",
) -> Response:
    form = AgentForm(name, model, instructions, tools, response_format, action_timeout)
    body = form.body()
    if not form.errors:
        checked = validate(AgentCreate, {k: v for k, v in body.items() if v is not None}, _FIELDS)
        if isinstance(checked, dict):
            form.errors = checked
        else:
            try:
                agent = await service.create_agent(
                    conn, viewer.organization_id, checked, now=services.clock.now()
                )
            except ApiError as exc:  # two tools of one name, an MCP server not found
                form.errors["tools"] = error_of(exc)
            else:
                return RedirectResponse(f"{PATH}/{quote(agent.id, safe='')}", status_code=303)
    return await _list_page(request, viewer, conn, CursorParams(20, None), form, status_code=400)


async def _agent_page(
    request: Request,
    viewer: Viewer,
    conn: Conn,
    agent_id: str,
    db: Database,
    *,
    form: AgentForm | None = None,
    message: str = "",
    run_error: str | None = None,
    status_code: int = 200,
) -> Response:
    agent = await service.get_agent(conn, viewer.organization_id, agent_id)
    versions, older = await service.list_versions(conn, viewer.organization_id, agent.id, VERSIONS_SHOWN)
    recent, _ = await list_page(db, viewer.organization_id, THREAD_CHOICES, {})
    return render(
        request,
        "agents/detail.html",
        viewer,
        status_code=status_code,
        agent=agent,
        versions=versions,
        changed=changes_of(list(versions)),
        more_versions=older is not None,
        compared=COMPARED,
        form=form or AgentForm.of(agent),
        threads=recent,
        message=message,
        run_error=run_error,
    )


@router.get(PATH + "/{agent_id}")
async def agent_page(
    request: Request, agent_id: str, viewer: ViewerDep, conn: ConnDep, services: ServicesDep
) -> Response:
    return await _agent_page(request, viewer, conn, agent_id, services.db)


@router.post(PATH + "/{agent_id}")
async def update_agent(
    request: Request,
    agent_id: str,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    name: Annotated[str, _TEXT] = "",
    model: Annotated[str, _TEXT] = "",
    instructions: Annotated[str, _LONG] = "",
    tools: Annotated[str, _LONG] = "",
    response_format: Annotated[str, _LONG] = "",
    action_timeout: Annotated[str, Form(max_length=40)] = "",
) -> Response:
    """Saves the form as the agent's next version."""
    await service.get_agent(conn, viewer.organization_id, agent_id)  # 404 before any form problem
    form = AgentForm(name, model, instructions, tools, response_format, action_timeout)
    body = form.body()
    if not form.errors:
        checked = validate(AgentUpdate, body, _FIELDS)
        if isinstance(checked, dict):
            form.errors = checked
        else:
            changes = {name: getattr(checked, name) for name in checked.model_fields_set}
            try:
                await service.update_agent(
                    conn, viewer.organization_id, agent_id, changes, now=services.clock.now()
                )
            except ApiError as exc:  # two tools of one name, an MCP server not found
                form.errors["tools"] = error_of(exc)
            else:
                return RedirectResponse(f"{PATH}/{quote(agent_id, safe='')}#versions-title", status_code=303)
    return await _agent_page(request, viewer, conn, agent_id, services.db, form=form, status_code=400)


@router.post(PATH + "/{agent_id}/runs")
async def start_run(
    request: Request,
    agent_id: str,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    thread: Annotated[str, Form(max_length=40)] = "",
    message: Annotated[str, Form(max_length=300_000)] = "",
) -> Response:
    """Starts a run with the agent on the chosen thread, then shows the thread."""
    try:
        await start_run_on(conn, services, viewer.organization_id, thread, message, agent_id)
    except (ApiError, ValidationError) as refused:
        problem = error_of(refused) if isinstance(refused, ApiError) else "The message is not valid."
        return await _agent_page(
            request, viewer, conn, agent_id, services.db, message=message, run_error=problem, status_code=400
        )
    return RedirectResponse(f"/threads/{quote(thread, safe='')}#run-view-title", status_code=303)


@router.post(PATH + "/{agent_id}/delete")
async def delete_agent(agent_id: str, viewer: ViewerDep, conn: ConnDep) -> Response:
    await service.delete_agent(conn, viewer.organization_id, agent_id)
    return RedirectResponse(PATH, status_code=303)
