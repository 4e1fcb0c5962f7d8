"""``/projects``: the organization's projects, newest first, and a form to make one, through
``projects.service`` and the API's ``ProjectCreate`` (so the dashboard and ``POST /v1/projects`` refuse
the same names)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from threadline.dashboard.forms import FieldErrors, validate
from threadline.dashboard.sessions import Viewer
from threadline.dashboard.web import PageServicesDep, ViewerDep, render
from threadline.kit.db import Conn
from threadline.kit.deps import ConnDep, CursorDep
from threadline.kit.errors import NotFound
from threadline.kit.pagination import DEFAULT_LIMIT, CursorParams
from threadline.projects import service
from threadline.projects.repository import Project
from threadline.projects.schemas import ProjectCreate

router = APIRouter()


async def _listing(conn: Conn, viewer: Viewer, page: CursorParams) -> dict[str, Any]:
    found, next_cursor = await service.list_projects(conn, viewer.organization_id, page)
    return {"projects": found, "next_cursor": next_cursor, "paged": page.after_id is not None}


@router.get("/projects")
async def projects_page(
    request: Request, viewer: ViewerDep, conn: ConnDep, page: CursorDep, created: str | None = None
) -> Response:
    made: Project | None = None
    if created:  # the notice after a create; another organization's id shows none
        try:
            made = await service.get_project(conn, viewer.organization_id, created[:100])
        except NotFound:
            made = None
    listing = await _listing(conn, viewer, page)
    return render(request, "projects/index.html", viewer, name="", errors={}, created=made, **listing)


@router.post("/projects")
async def create_project(
    request: Request,
    viewer: ViewerDep,
    services: PageServicesDep,
    name: Annotated[str, Form(max_length=10_000)] = "",
) -> Response:
    checked = validate(ProjectCreate, {"name": name}, {"name": "name"})
    if not isinstance(checked, dict):
        async with services.db.transaction(write=True) as conn:
            project = await service.create_project(
                conn, viewer.organization_id, checked.name, now=services.clock.now()
            )
        return RedirectResponse(f"/projects?created={project.id}", status_code=303)
    errors: FieldErrors = checked
    async with services.db.transaction(write=False) as conn:
        listing = await _listing(conn, viewer, CursorParams(limit=DEFAULT_LIMIT, after_id=None))
    return render(
        request, "projects/index.html", viewer, status_code=400, name=name, errors=errors, **listing
    )
