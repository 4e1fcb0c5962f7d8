"""Settings > MCP servers (``/settings/mcp-servers``): the organization's servers, registering one, its
tools as the server lists them now, and deleting one.

Header values are entered once: they go straight to the service, which seals them, and no page ever
holds one again (not the list, not the server's page, not the form when it comes back with a problem,
which asks for them anew). Every change answers with a redirect (POST, then GET), so a reload repeats
nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from threadline.dashboard.forms import FieldErrors, error_of, validate
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import ApiError, BadGateway
from threadline.mcp_servers import service
from threadline.mcp_servers.schemas import McpServerCreate

PATH = "/settings/mcp-servers"
_FIELDS = {
    "name": "name",
    "url": "url",
    "transport": "transport",
    "headers": "headers",
    "timeoutSeconds": "timeout",
}
_TEXT = Form(max_length=10_000)
_HEADERS = Form(max_length=300_000)


class McpPageServices(Protocol):
    clock: Clock
    db: Database
    egress: EgressPolicy
    secret_box: SecretBox | None


ServicesDep = Annotated[McpPageServices, Depends(get_services)]

router = APIRouter()


@dataclass
class AddForm:
    """The "Add a server" form as last sent, without its header values (never shown again)."""

    name: str = ""
    url: str = ""
    transport: str = "streamable_http"
    timeout: str = "30"
    header_names: list[str] = field(default_factory=list)
    errors: FieldErrors = field(default_factory=dict)


def parse_headers(text: str) -> dict[str, str] | str:
    """One ``Name: value`` a line (blank lines skipped); a problem in words instead."""
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            return f"Line {number} is not “Name: value”."
        headers[name.strip()] = value.strip()
    return headers


def _timeout(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text  # refused by the schema, in its words


@router.get(PATH)
async def mcp_servers_page(
    request: Request, viewer: ViewerDep, conn: ConnDep, page: CursorDep, added: str | None = None
) -> Response:
    servers, next_cursor = await service.list_servers(conn, viewer.organization_id, page)
    return render(
        request,
        "mcp_servers/index.html",
        viewer,
        servers=servers,
        next_cursor=next_cursor,
        paged=page.after_id is not None,
        added=next((s for s in servers if s.id == added), None),
        form=AddForm(),
    )


@router.post(PATH)
async def add_server(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    name: Annotated[str, _TEXT] = "",
    url: Annotated[str, _TEXT] = "",
    transport: Annotated[str, Form(max_length=40)] = "streamable_http",
    headers: Annotated[str, _HEADERS] = "",
    timeout_seconds: Annotated[str, Form(alias="timeout", max_length=40)] = "30",
) -> Response:
    form = AddForm(name=name, url=url, transport=transport, timeout=timeout_seconds)
    parsed = parse_headers(headers)
    if isinstance(parsed, str):
        form.errors["headers"] = parsed
    else:
        form.header_names = list(parsed)
        body = {
            "name": name,
            "url": url,
            "transport": transport,
            "headers": parsed,
            "timeoutSeconds": _timeout(timeout_seconds),
        }
        checked = validate(McpServerCreate, body, _FIELDS)
        if isinstance(checked, dict):
            form.errors = checked
        else:
            try:
                async with services.db.transaction(write=True) as conn:
                    server = await service.create_server(
                        conn,
                        viewer.organization_id,
                        checked,
                        now=services.clock.now(),
                        policy=services.egress,
                        box=services.secret_box,
                    )
            except ApiError as exc:  # the egress rules, or no key to seal with
                form.errors["url" if exc.status == 400 else ""] = error_of(exc)
            else:
                return RedirectResponse(f"{PATH}?added={server.id}", status_code=303)
    async with services.db.transaction(write=False) as conn:
        servers, next_cursor = await service.list_servers(conn, viewer.organization_id, service.FIRST_PAGE)
    return render(
        request,
        "mcp_servers/index.html",
        viewer,
        status_code=400,
        servers=servers,
        next_cursor=next_cursor,
        paged=False,
        added=None,
        form=form,
    )


@router.get(PATH + "/{server_id}")
async def server_page(request: Request, server_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    """The server and its tools, asked of the server now (a failure is shown, not an error page)."""
    async with services.db.transaction(write=False) as conn:
        server = await service.get_server(conn, viewer.organization_id, server_id)
    tools, problem = None, None
    try:
        tools = await service.list_tools(
            services.db, viewer.organization_id, server.id, box=services.secret_box, policy=services.egress
        )
    except BadGateway as exc:
        problem = exc.message
    return render(request, "mcp_servers/detail.html", viewer, server=server, tools=tools, problem=problem)


@router.post(PATH + "/{server_id}/delete")
async def delete_server(server_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    async with services.db.transaction(write=True) as conn:
        await service.delete_server(conn, viewer.organization_id, server_id)
    return RedirectResponse(PATH, status_code=303)
