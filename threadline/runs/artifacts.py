"""Artifacts a run made (``create_artifact``): stored with their ``artifact`` event, readable by the API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.runs.tables import artifacts

MAX_CONTENT_BYTES = 1024 * 1024
MAX_NAME_CHARS = 256
MAX_MIME_TYPE_CHARS = 128


@dataclass(frozen=True, slots=True)
class Artifact:
    id: str
    organization_id: str
    run_id: str
    thread_id: str
    name: str
    mime_type: str
    size: int  # bytes of the UTF-8 content
    content: str
    created_at: datetime


def _from_row(row: sa.RowMapping) -> Artifact:
    return Artifact(**{column.key: row[column.key] for column in artifacts.c})


class ArtifactRepository:
    """The artifacts of one organization's runs."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, artifact: Artifact) -> None:
        values = {**asdict(artifact), "organization_id": self._organization_id}
        await self._conn.execute(artifacts.insert().values(**values))

    async def get(self, artifact_id: str) -> Artifact | None:
        query = sa.select(artifacts).where(
            artifacts.c.id == artifact_id, artifacts.c.organization_id == self._organization_id
        )
        row = (await self._conn.execute(query)).mappings().first()
        return _from_row(row) if row else None

    async def page_of_run(self, run_id: str, params: CursorParams) -> tuple[Sequence[Artifact], str | None]:
        """Oldest first: the order the run made them."""
        query = sa.select(artifacts).where(
            artifacts.c.run_id == run_id, artifacts.c.organization_id == self._organization_id
        )
        rows, next_cursor = await fetch_cursor_page(
            self._conn, query, artifacts.c.id, params, newest_first=False
        )
        return [_from_row(row._mapping) for row in rows], next_cursor
