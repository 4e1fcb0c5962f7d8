"""SQLite FTS5: ``messages_fts`` and ``threads_fts`` index the tables' text (porter stemming, prefix
indexes) and their tenant columns, kept in sync by triggers inside the writing transaction (migration
0002). Tenant, thread and role filters are FTS columns too, so FTS5 intersects them with the words rather
than the query visiting every match to filter it afterwards."""

from __future__ import annotations

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.messages.tables import messages
from threadline.search.backend import ELLIPSIS, MARK_END, MARK_START, Hits, MessageFilter
from threadline.search.query import Query, to_fts5
from threadline.threads.tables import threads


def _exact(column: str, value: str) -> str:
    """A filter on an indexed column; ids are indexed without their prefix (migration 0002)."""
    if column.endswith("_id"):
        value = value.partition("_")[2] or value
    return f'{column} : "' + value.replace('"', '""') + '"'


def _snippet(fts: str) -> sa.ColumnElement[str]:
    return sa.func.snippet(sa.literal_column(fts), 0, MARK_START, MARK_END, ELLIPSIS, 24)


async def _search(conn: Conn, table: sa.Table, fts: str, match: str, page: PageParams) -> Hits:
    index = sa.table(fts, sa.column("rowid"))
    matches = sa.text(f"{fts} MATCH :match").bindparams(match=match)
    total = (await conn.execute(sa.select(sa.func.count()).select_from(index).where(matches))).scalar_one()
    if total == 0 or page.offset >= total:
        return Hits(rows=[], total=int(total))
    # bm25 weighs the text column only; the others are filters.
    weights = ", ".join(["1.0" if i == 0 else "0.0" for i in range(4 if fts == "messages_fts" else 2)])
    query = (
        sa.select(table, _snippet(fts).label("snippet"))
        .select_from(index.join(table, table.c.seq == index.c.rowid))
        .where(matches)
        .order_by(sa.literal_column(f"bm25({fts}, {weights})"), table.c.id.desc())
        .offset(page.offset)
        .limit(page.limit)
    )
    rows = (await conn.execute(query)).mappings().all()
    return Hits(rows=[(row, row["snippet"]) for row in rows], total=int(total))


class SqliteSearch:
    async def threads(self, conn: Conn, organization_id: str, query: Query, page: PageParams) -> Hits:
        match = f"{_exact('organization_id', organization_id)} AND search_text : ({to_fts5(query)})"
        return await _search(conn, threads, "threads_fts", match, page)

    async def messages(
        self,
        conn: Conn,
        organization_id: str,
        query: Query,
        where: MessageFilter,
        page: PageParams,
    ) -> Hits:
        parts = [_exact("organization_id", organization_id)]
        if where.thread_id is not None:
            parts.append(_exact("thread_id", where.thread_id))
        if where.role is not None:
            parts.append(_exact("role", where.role))
        match = " AND ".join(parts) + f" AND content : ({to_fts5(query)})"
        return await _search(conn, messages, "messages_fts", match, page)
