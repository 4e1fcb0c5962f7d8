"""MCP servers over HTTP."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.mcp_servers import service
from threadline.mcp_servers.schemas import (
    McpServerCreate,
    McpServerOut,
    McpServerUpdate,
    McpToolList,
    McpToolOut,
)


class McpServerServices(Protocol):
    """What the MCP server handlers read from the process's services."""

    clock: Clock
    db: Database
    egress: EgressPolicy
    secret_box: SecretBox | None


ServicesDep = Annotated[McpServerServices, Depends(get_services)]

router = APIRouter(prefix="/v1/mcp-servers", tags=["mcpServers"])


@router.get(
    "",
    operation_id="mcpServers.list",
    response_model=CursorPage[McpServerOut],
    responses=errors(400, *AUTHENTICATED),
)
async def list_servers(request: Request, conn: ConnDep, page: CursorDep) -> CursorPage[McpServerOut]:
    """The organization's MCP servers, newest first."""
    found, next_cursor = await service.list_servers(conn, principal_of(request).organization_id, page)
    return CursorPage(data=[McpServerOut.of(s) for s in found], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="mcpServers.create",
    status_code=201,
    response_model=McpServerOut,
    responses=errors(400, 413, 503, *AUTHENTICATED),
)
async def create_server(
    body: McpServerCreate, request: Request, conn: ConnDep, services: ServicesDep
) -> McpServerOut:
    """Registers an MCP server. A URL whose host is, or resolves to, a non-public address is refused (400
    `EGRESS_NOT_ALLOWED`) unless the operator allows it. Header values are stored encrypted and never
    returned (`headerNames` lists them)."""
    server = await service.create_server(
        conn,
        principal_of(request).organization_id,
        body,
        now=services.clock.now(),
        policy=services.egress,
        box=services.secret_box,
    )
    return McpServerOut.of(server)


@router.get(
    "/{serverId}",
    operation_id="mcpServers.get",
    response_model=McpServerOut,
    responses=errors(404, *AUTHENTICATED),
)
async def get_server(serverId: str, request: Request, conn: ConnDep) -> McpServerOut:
    return McpServerOut.of(await service.get_server(conn, principal_of(request).organization_id, serverId))


@router.patch(
    "/{serverId}",
    operation_id="mcpServers.update",
    response_model=McpServerOut,
    responses=errors(400, 404, 413, 503, *AUTHENTICATED),
)
async def update_server(
    serverId: str, body: McpServerUpdate, request: Request, conn: ConnDep, services: ServicesDep
) -> McpServerOut:
    """Replaces the fields sent; `headers` replaces every header (`{}` removes them all)."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    fields = McpServerUpdate.model_fields
    nulls = sorted(fields[name].alias or name for name, value in changes.items() if value is None)
    if nulls:
        raise BadRequest(f"{', '.join(nulls)} cannot be null.", reason=Reason.VALIDATION_FAILED)
    server = await service.update_server(
        conn,
        principal_of(request).organization_id,
        serverId,
        changes,
        now=services.clock.now(),
        policy=services.egress,
        box=services.secret_box,
    )
    return McpServerOut.of(server)


@router.delete(
    "/{serverId}",
    operation_id="mcpServers.delete",
    response_model=McpServerOut,
    responses=errors(404, *AUTHENTICATED),
)
async def delete_server(serverId: str, request: Request, conn: ConnDep) -> McpServerOut:
    return McpServerOut.of(await service.delete_server(conn, principal_of(request).organization_id, serverId))


@router.get(
    "/{serverId}/tools",
    operation_id="mcpServers.listTools",
    response_model=McpToolList,
    responses=errors(404, 502, *AUTHENTICATED),
)
async def list_tools(serverId: str, request: Request, services: ServicesDep) -> McpToolList:
    """The server's tools now, asked of the server itself (within its `timeoutSeconds`). 502 `BAD_GATEWAY`
    reason `MCP_UNREACHABLE` when it cannot be reached, fails, or is not allowed by the egress rules."""
    tools = await service.list_tools(
        services.db,
        principal_of(request).organization_id,
        serverId,
        box=services.secret_box,
        policy=services.egress,
    )
    return McpToolList(
        data=[McpToolOut(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools]
    )
