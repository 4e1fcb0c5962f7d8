"""PostgreSQL: a stored ``search_vector`` (``to_tsvector('english', …)``, generated) with a GIN index on
each searched table (migration 0002), matched with ``@@``; and, for message search across threads, postings
of our own (``search/postings.py``, ``search/sealed.py``), which count without visiting every match.

Through the GIN index (thread search, search within a thread, and what postings cannot bound) the count is a
bitmap scan of the index and a visit of every matching heap page (PostgreSQL 15's bitmap heap scan does not
skip all-visible pages even for ``count(*)``, and GIN has no index-only scan; bench/HISTORY.md); the newest
matches are whatever the planner finds cheapest for ``ORDER BY seq DESC LIMIT``. Ranking and snippets are
``ranking.py``'s: ``ts_rank_cd`` and ``ts_headline`` are not called, as they detoast and re-parse every
row they see.

A word of three letters or fewer (``query.is_short``) matches as typed, as a prefix of the stored stems, or
as its own stem exactly, not as a prefix of its stem: ``ins`` was ``'in':*`` (290,000 of 1,000,000 bench
messages, 580 ms to count) where SQLite matches ``ins*`` (62,000). English stop words still match nothing."""

from __future__ import annotations

from functools import reduce
from typing import Any

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.messages.tables import messages
from threadline.search import sealed
from threadline.search.backend import Hits, Matches, MessageFilter, StoredMatches, page_of
from threadline.search.query import Phrase, Query, is_short, tsquery_phrase
from threadline.search.sets import Seqs
from threadline.threads.tables import threads

_ENGLISH: sa.ColumnElement[Any] = sa.literal_column("'english'::regconfig")
_SIMPLE: sa.ColumnElement[Any] = sa.literal_column("'simple'::regconfig")


def _phrase(phrase: Phrase) -> sa.ColumnElement[Any]:
    stemmed = sa.func.to_tsquery(_ENGLISH, tsquery_phrase(phrase))
    word = phrase.words[0]
    if not (phrase.is_prefix and is_short(word)):
        return stemmed
    exact = sa.func.to_tsquery(_ENGLISH, word)  # empty for a stop word
    typed = sa.func.tsquery_or(sa.func.to_tsquery(_SIMPLE, f"{word}:*"), exact)
    return sa.case((sa.func.numnode(exact) == 0, exact), else_=typed)


def tsquery(query: Query) -> sa.ColumnElement[Any]:
    """The query as a ``tsquery`` (an empty operand, a stop word, drops out of ``tsquery_and``/``_or``)."""
    groups = [reduce(sa.func.tsquery_or, map(_phrase, group)) for group in query.groups]
    expression: sa.ColumnElement[Any] = reduce(sa.func.tsquery_and, groups)
    for phrase in query.excluded:
        expression = sa.func.tsquery_and(expression, sa.func.tsquery_not(_phrase(phrase)))
    return expression


async def compiled_tsquery(conn: Conn, query: Query) -> str:
    """The query as PostgreSQL prints it, stemmed and stop words dropped: what the postings are read for."""
    return str((await conn.execute(sa.select(sa.cast(tsquery(query), sa.Text)))).scalar_one())


class _Matches(StoredMatches):
    def __init__(
        self, conn: Conn, table: sa.Table, text: str, filters: list[sa.ColumnElement[bool]], query: Query
    ) -> None:
        super().__init__(conn, table, text, filters)
        vector: sa.ColumnElement[object] = sa.literal_column(f"{table.name}.search_vector")
        self._where = sa.and_(*filters, vector.op("@@")(tsquery(query)))

    async def count(self) -> int:
        query = sa.select(sa.func.count()).select_from(self._table).where(self._where)
        return int((await self._conn.execute(query)).scalar_one())

    async def newest(self, offset: int, limit: int) -> list[int]:
        table = self._table
        query = (
            sa.select(table.c.seq).where(self._where).order_by(table.c.seq.desc()).offset(offset).limit(limit)
        )
        return list((await self._conn.execute(query)).scalars())


class _Sealed(StoredMatches):
    """Matches already known, in ``seq`` order: from the postings, and the GIN index above the watermark."""

    def __init__(self, conn: Conn, filters: list[sa.ColumnElement[bool]], seqs: Seqs) -> None:
        super().__init__(conn, messages, "content", filters)
        self._newest_first = seqs[::-1]

    async def count(self) -> int:
        return len(self._newest_first)

    async def newest(self, offset: int, limit: int) -> list[int]:
        return [int(seq) for seq in self._newest_first[offset : offset + limit]]


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
        seqs = None
        if where.thread_id is None:  # a thread's messages are few: the GIN index finds them at once
            compiled = await compiled_tsquery(conn, query)
            seqs = await sealed.matches(conn, organization_id, compiled, where.role)
        found: Matches = _Matches(conn, messages, "content", filters, query)
        if seqs is not None:
            found = _Sealed(conn, filters, seqs)
        return await page_of(found, query, "content", page)
