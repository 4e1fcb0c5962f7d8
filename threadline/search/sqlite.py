"""SQLite FTS5: ``messages_fts`` and ``threads_fts`` index the tables' text (prefix indexes of 2 to 8
letters, unstemmed words) and their tenant columns, kept in sync by triggers inside the writing
transaction (migrations 0002, 0006). Tenant, thread and role filters are FTS columns too, so FTS5
intersects them with the words rather than the query visiting every match to filter it afterwards.

FTS5 counts a match expression over its doclists without reading a table row, and returns matches in
rowid (= ``seq``) order, newest first with ``ORDER BY rowid DESC``: the newest matches are the start of
that walk, not a sort. Ranking and snippets are ``ranking.py``'s, so no statement calls ``bm25``,
``snippet`` or ``highlight`` (``bm25`` walks every phrase's whole doclist, the tenant filter's included).

The tenant filter is written the cheaper of two exact ways. FTS5 intersects a phrase with a filter by
stepping through the filter's doclist up to each match; an organization holding most of the messages has
a doclist as long as the table, and stepping through it doubled the cost of counting a common word
(1,000,000 messages: "error" 51 ms instead of 19). So when the other organizations are few and hold fewer
messages, the filter excludes them instead (``NOT organization_id : …``), whose doclists are short. The
organizations are read in the search's own transaction, so the excluded set is exactly the others; only
the sizes that pick the form come from a statistic (threads per organization) refreshed every minute."""

from __future__ import annotations

import time

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.messages.tables import messages
from threadline.organizations.tables import organizations
from threadline.search.backend import Hits, MessageFilter, StoredMatches, page_of
from threadline.search.query import Query, to_fts5
from threadline.threads.tables import threads


def _exact(column: str, value: str) -> str:
    """A filter on an indexed column; ids are indexed without their prefix (migration 0002), roles after a
    ``0`` (migration 0006)."""
    if column.endswith("_id"):
        value = value.partition("_")[2] or value
    elif column == "role":
        value = "0" + value
    return f'{column} : "' + value.replace('"', '""') + '"'


_MAX_EXCLUDED = 16  # other organizations an exclusion may list; beyond, the plain filter
_SIZES_TTL_SECONDS = 60.0


class _TenantFilter:
    """Writes an organization's filter for a MATCH expression (see the module docstring)."""

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}
        self._sizes_at = -_SIZES_TTL_SECONDS

    async def _sizes_of(self, conn: Conn) -> dict[str, int]:
        """Threads per organization: a stand-in for their messages that the (organization_id, id) index
        counts without reading a row (summing ``message_count`` read every thread: 7-13 ms at 10,000
        threads). Only ever used to pick a form."""
        if time.monotonic() - self._sizes_at >= _SIZES_TTL_SECONDS:
            size = sa.func.count().label("size")
            query = sa.select(threads.c.organization_id, size).group_by(threads.c.organization_id)
            rows = (await conn.execute(query)).mappings()
            self._sizes = {row["organization_id"]: int(row["size"]) for row in rows}
            self._sizes_at = time.monotonic()
        return self._sizes

    async def __call__(self, conn: Conn, organization_id: str, expression: str) -> str:
        """``expression`` (over the messages' index) limited to the organization's messages."""
        mine = f"{_exact('organization_id', organization_id)} AND {expression}"
        query = sa.select(organizations.c.id).where(organizations.c.id != organization_id)
        others = list((await conn.execute(query.limit(_MAX_EXCLUDED + 1))).scalars())
        if len(others) > _MAX_EXCLUDED:
            return mine
        sizes = await self._sizes_of(conn)
        if sum(sizes.get(o, 0) for o in others) >= sizes.get(organization_id, 0):
            return mine
        if not others:
            return expression
        return f"({expression}) NOT (" + " OR ".join(_exact("organization_id", o) for o in others) + ")"


class _Matches(StoredMatches):
    def __init__(self, conn: Conn, table: sa.Table, text: str, match: str, organization_id: str) -> None:
        super().__init__(conn, table, text, [table.c.organization_id == organization_id])
        fts = f"{table.name}_fts"
        self._index = sa.table(fts, sa.column("rowid"))
        self._match = sa.text(f"{fts} MATCH :match").bindparams(match=match)

    async def count(self) -> int:
        query = sa.select(sa.func.count()).select_from(self._index).where(self._match)
        return int((await self._conn.execute(query)).scalar_one())

    async def newest(self, offset: int, limit: int) -> list[int]:
        query = (
            sa.select(self._index.c.rowid)
            .where(self._match)
            .order_by(self._index.c.rowid.desc())
            .offset(offset)
            .limit(limit)
        )
        return list((await self._conn.execute(query)).scalars())


class SqliteSearch:
    def __init__(self) -> None:
        self._tenant = _TenantFilter()

    async def threads(self, conn: Conn, organization_id: str, query: Query, page: PageParams) -> Hits:
        match = f"{_exact('organization_id', organization_id)} AND search_text : ({to_fts5(query)})"
        matches = _Matches(conn, threads, "search_text", match, organization_id)
        return await page_of(matches, query, "search_text", page)

    async def messages(
        self,
        conn: Conn,
        organization_id: str,
        query: Query,
        where: MessageFilter,
        page: PageParams,
    ) -> Hits:
        parts = []
        if where.thread_id is not None:
            parts.append(_exact("thread_id", where.thread_id))
        if where.role is not None:
            parts.append(_exact("role", where.role))
        expression = " AND ".join([*parts, f"content : ({to_fts5(query)})"])
        match = await self._tenant(conn, organization_id, expression)
        matches = _Matches(conn, messages, "content", match, organization_id)
        return await page_of(matches, query, "content", page)
