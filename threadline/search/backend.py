"""What a search backend answers (one page of hits and how many there are in all), and the order of hits,
which is the same on both backends.

Order: the ``CANDIDATES`` newest matches (by ``seq``, the order rows were written in) come first, by
relevance (``ranking.py``) and then newest first; every older match follows, newest first. It is a total
order (``seq`` is unique), so walking the pages returns each match once, and ``total`` is an exact count.
Why not relevance over every match: at 1,000,000 messages a common word or prefix matches 50,000-220,000
of them, and scoring them all (``bm25`` / ``ts_rank_cd``) took 160-500 ms a query where counting took
10-50 ms on SQLite (bench/search.py; docs/behaviour.md "Search", bench/HISTORY.md). The newest matches
are found from the index's own order (FTS5 doclists are in rowid order; PostgreSQL walks the primary key
backwards), so a page costs a count plus a few hundred rows, whatever the number of matches.

Each hit carries a snippet of the matched text with the matches between ``<mark>`` and ``</mark>``; the
rest of the snippet is the stored text as is (escape it before rendering it as HTML)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams
from threadline.search.query import Query
from threadline.search.ranking import Matcher

CANDIDATES = 200  # the newest matches ranked by relevance; see the module docstring


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


class Matches(Protocol):
    """One query's matches in one backend: what ``page_of`` needs to put a page together."""

    async def count(self) -> int: ...

    async def newest(self, offset: int, limit: int) -> list[int]:
        """``seq`` of matches, newest first, skipping ``offset``."""
        ...

    async def texts(self, seqs: Sequence[int]) -> Mapping[int, str]:
        """The searched text of these matches, by ``seq`` (for ranking: no other column is decoded)."""
        ...

    async def rows(self, seqs: Sequence[int]) -> Mapping[int, sa.RowMapping]:
        """The table rows of these matches, by ``seq``."""
        ...


class StoredMatches:
    """The part of ``Matches`` both backends read the same way: the matched rows, by ``seq``, within the
    filters (the organization's at least: the match has it already, the rows are scoped all the same)."""

    def __init__(
        self, conn: Conn, table: sa.Table, text: str, filters: Sequence[sa.ColumnElement[bool]]
    ) -> None:
        self._conn, self._table = conn, table
        self._text: sa.ColumnElement[str] = table.c[text]
        self._filters = list(filters)

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


async def page_of(matches: Matches, query: Query, text: str, page: PageParams) -> Hits:
    """The page of ``matches`` in the order of the module docstring; ``text`` names the searched column."""
    candidates: list[int] = []
    if page.offset < CANDIDATES:
        candidates = await matches.newest(0, CANDIDATES)
    if page.offset < CANDIDATES and len(candidates) < CANDIDATES:
        total = len(candidates)  # all the matches: no second walk to count them
    else:
        total = await matches.count()
    if total == 0 or page.offset >= total:
        return Hits(rows=[], total=total)
    matcher = Matcher(query)
    ranked_until = min(CANDIDATES, total)
    end = min(page.offset + page.limit, total)
    chosen: list[int] = []
    if candidates:
        texts = await matches.texts(candidates)
        scores = dict(zip(texts, matcher.scores(list(texts.values())), strict=True))
        chosen = sorted(texts, key=lambda seq: (-scores[seq], -seq))[page.offset : end]
    if end > ranked_until:
        start = max(page.offset, ranked_until)
        chosen += await matches.newest(start, end - start)
    rows = await matches.rows(chosen)
    return Hits(rows=[(rows[s], matcher.snippet(rows[s][text])) for s in chosen if s in rows], total=total)
