from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.projects import service
from threadline.projects.schemas import ProjectCreate, ProjectOut


class ProjectServices(Protocol):
    """What the project handlers read from the process's services."""

    clock: Clock


ServicesDep = Annotated[ProjectServices, Depends(get_services)]

router = APIRouter(prefix="/v1/projects", tags=["projects"])


@router.get(
    "",
    operation_id="projects.list",
    response_model=CursorPage[ProjectOut],
    responses=errors(400, *AUTHENTICATED),
)
async def list_projects(request: Request, conn: ConnDep, page: CursorDep) -> CursorPage[ProjectOut]:
    """The organization's projects, newest first."""
    projects, next_cursor = await service.list_projects(conn, principal_of(request).organization_id, page)
    return CursorPage(data=[ProjectOut.of(p) for p in projects], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="projects.create",
    status_code=201,
    response_model=ProjectOut,
    responses=errors(400, 413, *AUTHENTICATED),
)
async def create_project(
    body: ProjectCreate, request: Request, conn: ConnDep, services: ServicesDep
) -> ProjectOut:
    organization_id = principal_of(request).organization_id
    return ProjectOut.of(
        await service.create_project(conn, organization_id, body.name, now=services.clock.now())
    )


@router.get(
    "/{projectId}",
    operation_id="projects.get",
    response_model=ProjectOut,
    responses=errors(404, *AUTHENTICATED),
)
async def get_project(projectId: str, request: Request, conn: ConnDep) -> ProjectOut:
    return ProjectOut.of(await service.get_project(conn, principal_of(request).organization_id, projectId))
