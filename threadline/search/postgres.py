"""PostgreSQL: a stored ``search_vector`` (``to_tsvector('english', …)``, generated) with a GIN index on
each searched table (migration 0002), matched with ``@@``.

The count is a bitmap scan of the GIN index; the newest matches are whatever the planner finds cheapest
for ``ORDER BY seq DESC LIMIT``: for a common word, walking the primary key backwards and testing each row
until enough match (a few thousand rows), for a rare one, the GIN bitmap and a sort of its few rows.
Ranking and snippets are ``ranking.py``'s: ``ts_rank_cd`` and ``ts_headline`` are not called, as they
detoast and re-parse every row they see."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.messages.tables import messages
from threadline.search.backend import Hits, MessageFilter, page_of
from threadline.search.query import Query, to_tsquery
from threadline.threads.tables import threads


class _Matches:
    def __init__(
        self, conn: Conn, table: sa.Table, text: str, filters: list[sa.ColumnElement[bool]], query: Query
    ) -> None:
        self._conn, self._table = conn, table
        self._text: sa.ColumnElement[str] = table.c[text]
        tsquery = sa.func.to_tsquery(sa.literal_column("'english'::regconfig"), to_tsquery(query))
        vector: sa.ColumnElement[object] = sa.literal_column(f"{table.name}.search_vector")
        self._filters = filters
        self._where = sa.and_(*filters, vector.op("@@")(tsquery))

    async def count(self) -> int:
        query = sa.select(sa.func.count()).select_from(self._table).where(self._where)
        return int((await self._conn.execute(query)).scalar_one())

    async def newest(self, offset: int, limit: int) -> list[int]:
        table = self._table
        query = (
            sa.select(table.c.seq).where(self._where).order_by(table.c.seq.desc()).offset(offset).limit(limit)
        )
        return list((await self._conn.execute(query)).scalars())

    async def texts(self, seqs: Sequence[int]) -> Mapping[int, str]:
        if not seqs:
            return {}
        table = self._table
        query = sa.select(table.c.seq, self._text.label("text")).where(table.c.seq.in_(seqs), *self._filters)
        return {row["seq"]: row["text"] for row in (await self._conn.execute(query)).mappings()}

    async def rows(self, seqs: Sequence[int]) -> Mapping[int, sa.RowMapping]:
        if not seqs:
            return {}
        table = self._table
        query = sa.select(table).where(table.c.seq.in_(seqs), *self._filters)
        return {row["seq"]: row for row in (await self._conn.execute(query)).mappings()}


class PostgresSearch:
    async def threads(self, conn: Conn, organization_id: str, query: Query, page: PageParams) -> Hits:
        filters = [threads.c.organization_id == organization_id]
        return await page_of(
            _Matches(conn, threads, "search_text", filters, query), query, "search_text", page
        )

    async def messages(
        self,
        conn: Conn,
        organization_id: str,
        query: Query,
        where: MessageFilter,
        page: PageParams,
    ) -> Hits:
        filters = [messages.c.organization_id == organization_id]
        if where.thread_id is not None:
            filters.append(messages.c.thread_id == where.thread_id)
        if where.role is not None:
            filters.append(messages.c.role == where.role)
        return await page_of(_Matches(conn, messages, "content", filters, query), query, "content", page)
