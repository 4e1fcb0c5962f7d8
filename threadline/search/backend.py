"""What a search backend answers: one window of ranked hits and how many there are in all.

Hits are ranked by relevance, then recency. Each carries a snippet of the matched text with the matches
between ``<mark>`` and ``</mark>``; the rest of the snippet is the stored text as is (escape it before
rendering it as HTML)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.search.query import Query

MARK_START, MARK_END, ELLIPSIS = "<mark>", "</mark>", "…"


@dataclass(frozen=True, slots=True)
class MessageFilter:
    thread_id: str | None = None
    role: str | None = None


@dataclass(frozen=True, slots=True)
class Hits:
    rows: Sequence[tuple[sa.RowMapping, str]]  # (table row, snippet)
    total: int


class SearchBackend(Protocol):
    async def threads(self, conn: Conn, organization_id: str, query: Query, page: PageParams) -> Hits: ...

    async def messages(
        self,
        conn: Conn,
        organization_id: str,
        query: Query,
        where: MessageFilter,
        page: PageParams,
    ) -> Hits: ...


def backend_for(dialect: str) -> SearchBackend:
    if dialect == "sqlite":
        from threadline.search.sqlite import SqliteSearch

        return SqliteSearch()
    from threadline.search.postgres import PostgresSearch

    return PostgresSearch()
