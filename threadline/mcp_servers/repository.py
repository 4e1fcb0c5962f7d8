"""MCP server rows, scoped to one organization when the repository is made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.mcp_servers.tables import mcp_servers


@dataclass(frozen=True, slots=True)
class McpServer:
    id: str
    organization_id: str
    name: str
    url: str
    transport: str
    header_names: list[str]
    # The header values as ``kit.encryption`` sealed them (bound to ``id``); None without headers.
    headers_sealed: str | None
    timeout_seconds: float
    created_at: datetime
    updated_at: datetime


def _from_row(row: sa.RowMapping) -> McpServer:
    return McpServer(
        id=row["id"],
        organization_id=row["organization_id"],
        name=row["name"],
        url=row["url"],
        transport=row["transport"],
        header_names=list(row["header_names"]),
        headers_sealed=row["headers_sealed"],
        timeout_seconds=float(row["timeout_seconds"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _values(server: McpServer) -> dict[str, object]:
    return {
        "name": server.name,
        "url": server.url,
        "transport": server.transport,
        "header_names": server.header_names,
        "headers_sealed": server.headers_sealed,
        "timeout_seconds": server.timeout_seconds,
        "updated_at": server.updated_at,
    }


class McpServerRepository:
    """The MCP servers of one organization."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    def _mine(self, server_id: str) -> sa.ColumnElement[bool]:
        return sa.and_(mcp_servers.c.id == server_id, mcp_servers.c.organization_id == self._organization_id)

    async def insert(self, server: McpServer) -> None:
        await self._conn.execute(
            mcp_servers.insert().values(
                id=server.id,
                organization_id=self._organization_id,
                created_at=server.created_at,
                **_values(server),
            )
        )

    async def get(self, server_id: str) -> McpServer | None:
        query = sa.select(mcp_servers).where(self._mine(server_id))
        row = (await self._conn.execute(query)).mappings().first()
        return _from_row(row) if row else None

    async def page(self, params: CursorParams) -> tuple[Sequence[McpServer], str | None]:
        query = sa.select(mcp_servers).where(mcp_servers.c.organization_id == self._organization_id)
        rows, next_cursor = await fetch_cursor_page(self._conn, query, mcp_servers.c.id, params)
        return [_from_row(row._mapping) for row in rows], next_cursor

    async def save(self, server: McpServer) -> None:
        await self._conn.execute(mcp_servers.update().where(self._mine(server.id)).values(**_values(server)))

    async def delete(self, server_id: str) -> None:
        await self._conn.execute(mcp_servers.delete().where(self._mine(server_id)))
