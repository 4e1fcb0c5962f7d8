"""Project rules (few yet: a project is a name inside an organization)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from threadline.kit.db import Conn
from threadline.kit.errors import NotFound
from threadline.kit.pagination import CursorParams
from threadline.projects.repository import Project, ProjectRepository


async def create_project(conn: Conn, organization_id: str, name: str, *, now: datetime) -> Project:
    return await ProjectRepository(conn, organization_id).insert(name, now)


async def get_project(conn: Conn, organization_id: str, project_id: str) -> Project:
    project = await ProjectRepository(conn, organization_id).get(project_id)
    if project is None:
        raise NotFound(f"Project {project_id} was not found.")
    return project


async def list_projects(
    conn: Conn, organization_id: str, params: CursorParams
) -> tuple[Sequence[Project], str | None]:
    return await ProjectRepository(conn, organization_id).page(params)
