"""Project queries, each scoped to one organization."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.projects.tables import projects


@dataclass(frozen=True, slots=True)
class Project:
    id: str
    organization_id: str
    name: str
    created_at: datetime


def _from_row(row: sa.RowMapping) -> Project:
    return Project(
        id=row["id"], organization_id=row["organization_id"], name=row["name"], created_at=row["created_at"]
    )


class ProjectRepository:
    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, name: str, now: datetime) -> Project:
        project = Project(id=new_id("proj"), organization_id=self._organization_id, name=name, created_at=now)
        await self._conn.execute(
            projects.insert().values(
                id=project.id,
                organization_id=project.organization_id,
                name=project.name,
                created_at=project.created_at,
            )
        )
        return project

    async def get(self, project_id: str) -> Project | None:
        query = sa.select(projects).where(
            projects.c.id == project_id, projects.c.organization_id == self._organization_id
        )
        row = (await self._conn.execute(query)).mappings().first()
        return _from_row(row) if row else None

    async def page(self, params: CursorParams) -> tuple[Sequence[Project], str | None]:
        query = sa.select(projects).where(projects.c.organization_id == self._organization_id)
        rows, next_cursor = await fetch_cursor_page(self._conn, query, projects.c.id, params)
        return [_from_row(row._mapping) for row in rows], next_cursor
