"""Agents over HTTP."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.agents import service
from threadline.agents.schemas import AgentCreate, AgentOut, AgentUpdate
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage


class AgentServices(Protocol):
    """What the agent handlers read from the process's services."""

    clock: Clock


ServicesDep = Annotated[AgentServices, Depends(get_services)]

router = APIRouter(prefix="/v1/agents", tags=["agents"])
# Null is refused for these on update (the others go back to their defaults).
_NOT_NULL = ("name", "metadata")


@router.get(
    "", operation_id="agents.list", response_model=CursorPage[AgentOut], responses=errors(400, *AUTHENTICATED)
)
async def list_agents(request: Request, conn: ConnDep, page: CursorDep) -> CursorPage[AgentOut]:
    """The organization's agents (each at its latest version), newest first."""
    found, next_cursor = await service.list_agents(conn, principal_of(request).organization_id, page)
    return CursorPage(data=[AgentOut.of(a) for a in found], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="agents.create",
    status_code=201,
    response_model=AgentOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def create_agent(body: AgentCreate, request: Request, conn: ConnDep, services: ServicesDep) -> AgentOut:
    """Saves a run configuration as version 1. Runs name it with `agentId`; their own fields override its
    fields. An `mcp` tool entry naming a server the organization cannot see is 404."""
    organization_id = principal_of(request).organization_id
    return AgentOut.of(await service.create_agent(conn, organization_id, body, now=services.clock.now()))


@router.get(
    "/{agentId}", operation_id="agents.get", response_model=AgentOut, responses=errors(404, *AUTHENTICATED)
)
async def get_agent(agentId: str, request: Request, conn: ConnDep) -> AgentOut:
    """The agent at its latest version."""
    return AgentOut.of(await service.get_agent(conn, principal_of(request).organization_id, agentId))


@router.patch(
    "/{agentId}",
    operation_id="agents.update",
    response_model=AgentOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def update_agent(
    agentId: str, body: AgentUpdate, request: Request, conn: ConnDep, services: ServicesDep
) -> AgentOut:
    """Makes a new version (`version` + 1) with the fields sent replaced; earlier versions stay as they
    were, and runs pinned to them run them."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    fields = AgentUpdate.model_fields
    nulls = sorted(
        fields[name].alias or name for name in _NOT_NULL if name in changes and changes[name] is None
    )
    if nulls:
        raise BadRequest(f"{', '.join(nulls)} cannot be null.", reason=Reason.VALIDATION_FAILED)
    agent = await service.update_agent(
        conn, principal_of(request).organization_id, agentId, changes, now=services.clock.now()
    )
    return AgentOut.of(agent)


@router.delete(
    "/{agentId}", operation_id="agents.delete", response_model=AgentOut, responses=errors(404, *AUTHENTICATED)
)
async def delete_agent(agentId: str, request: Request, conn: ConnDep) -> AgentOut:
    """Deletes the agent and its versions. Its runs keep their record (`agentId`, `agentVersion`)."""
    return AgentOut.of(await service.delete_agent(conn, principal_of(request).organization_id, agentId))


@router.get(
    "/{agentId}/versions",
    operation_id="agents.listVersions",
    response_model=CursorPage[AgentOut],
    responses=errors(400, 404, *AUTHENTICATED),
)
async def list_versions(
    agentId: str, request: Request, conn: ConnDep, page: CursorDep
) -> CursorPage[AgentOut]:
    """Every version as it was, newest first (`updatedAt`: when each was made)."""
    found, next_cursor = await service.list_versions(
        conn, principal_of(request).organization_id, agentId, page
    )
    return CursorPage(data=[AgentOut.of(a) for a in found], next_cursor=next_cursor)
