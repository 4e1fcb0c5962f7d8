"""PostgreSQL: a stored ``search_vector`` (``to_tsvector('english', …)``, generated) with a GIN index on
each searched table (migration 0002), ranked with ``ts_rank_cd`` and highlighted with ``ts_headline`` for
the rows of the page only (headlines are costly; they are never computed for rows that are not shown)."""

from __future__ import annotations

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.messages.tables import messages
from threadline.search.backend import ELLIPSIS, MARK_END, MARK_START, Hits, MessageFilter
from threadline.search.query import Query, to_tsquery
from threadline.threads.tables import threads

_HEADLINE = (
    f"StartSel={MARK_START}, StopSel={MARK_END}, FragmentDelimiter={ELLIPSIS}, MaxWords=30, MinWords=12"
)


async def _search(
    conn: Conn,
    table: sa.Table,
    text_column: sa.Column[str],
    filters: list[sa.ColumnElement[bool]],
    query: Query,
    page: PageParams,
) -> Hits:
    tsquery = sa.func.to_tsquery(sa.literal_column("'english'::regconfig"), to_tsquery(query))
    vector: sa.ColumnElement[object] = sa.literal_column(f"{table.name}.search_vector")
    where = sa.and_(*filters, vector.op("@@")(tsquery))
    total = (await conn.execute(sa.select(sa.func.count()).select_from(table).where(where))).scalar_one()
    if total == 0 or page.offset >= total:
        return Hits(rows=[], total=int(total))
    rank = sa.func.ts_rank_cd(vector, tsquery).label("rank")
    window = (
        sa.select(table.c.seq, rank)
        .where(where)
        .order_by(rank.desc(), table.c.id.desc())
        .offset(page.offset)
        .limit(page.limit)
        .subquery()
    )
    headline = sa.func.ts_headline(sa.literal_column("'english'::regconfig"), text_column, tsquery, _HEADLINE)
    rows = (
        (
            await conn.execute(
                sa.select(table, headline.label("snippet"))
                .join(window, window.c.seq == table.c.seq)
                .order_by(window.c.rank.desc(), table.c.id.desc())
            )
        )
        .mappings()
        .all()
    )
    return Hits(rows=[(row, row["snippet"]) for row in rows], total=int(total))


class PostgresSearch:
    async def threads(self, conn: Conn, organization_id: str, query: Query, page: PageParams) -> Hits:
        filters = [threads.c.organization_id == organization_id]
        return await _search(conn, threads, threads.c.search_text, filters, query, page)

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
        return await _search(conn, messages, messages.c.content, filters, query, page)
