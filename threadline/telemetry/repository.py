"""Reading log records back, and deleting them by age. Every query names the organization (``LogRepository``).

The primary key is (organization, id, received_at) and ids are made in commit order from the time of
receipt, so "newest first", cursors, ``since``/``until`` and retention are all ranges of that one key.
Filters that the key does not cover (project, level, kind, text) are checked row by row over a bounded
window of the key: a page examines at most ``SCAN_WINDOW`` records, and when the window ends before the
page is full the page is returned short with a ``nextCursor`` where the scan stopped. Latency stays
bounded however rare the match (a rare word across ten million records would otherwise scan them all),
and a client that walks ``nextCursor`` still sees every match exactly once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.hours import hour_of
from threadline.kit.ids import floor_id, id_time_ms
from threadline.kit.pagination import CursorParams, encode_cursor
from threadline.kit.timebuckets import TimeBuckets
from threadline.search.query import Phrase, Query
from threadline.telemetry.log_store import ID_PREFIX
from threadline.telemetry.schemas import Kind, Level, LogRecordOut, levels_at_or_above
from threadline.telemetry.tables import log_counts, log_records

SCAN_WINDOW = 10_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TAIL_BATCH = 500
_DELETE_BATCH = 10_000
t = log_records.c
_COUNTED = ("organization_id", "project_id", "level", "kind", "hour")
_SUBTRACT = (
    log_counts.update()
    .where(*(log_counts.c[name] == sa.bindparam(f"k_{name}") for name in _COUNTED))
    .values(records=log_counts.c.records - sa.bindparam("k_records"))
)


@dataclass(frozen=True, slots=True)
class LogFilters:
    project_id: str | None = None
    level: Level | None = None
    kind: Kind | None = None
    since: datetime | None = None
    until: datetime | None = None
    query: Query | None = None

    def row_conditions(self) -> list[sa.ColumnElement[bool]]:
        """The conditions the primary key does not cover."""
        conditions: list[sa.ColumnElement[bool]] = []
        if self.project_id is not None:
            conditions.append(t.project_id == self.project_id)
        if self.level is not None and self.level != "trace":
            conditions.append(t.level.in_(levels_at_or_above(self.level)))
        if self.kind is not None:
            conditions.append(t.kind == self.kind)
        if self.query is not None:
            conditions.append(_text_match(self.query))
        return conditions

    def key_conditions(self, organization_id: str) -> list[sa.ColumnElement[bool]]:
        """The organization and the time range, as ranges of the primary key. ``received_at`` is named
        too so PostgreSQL skips the partitions outside the range."""
        conditions = [t.organization_id == organization_id]
        if self.since is not None:
            conditions += [t.id >= _floor(self.since), t.received_at >= self.since]
        if self.until is not None:
            # Ids carry whole milliseconds: the bound rounds up, received_at decides within the millisecond.
            conditions += [t.id < _floor(self.until, round_up=True), t.received_at < self.until]
        return conditions


def _floor(moment: datetime, *, round_up: bool = False) -> str:
    """The smallest id made at ``moment``'s millisecond (the next one with ``round_up``, unless exact)."""
    micros = (moment - _EPOCH) // timedelta(microseconds=1)
    milliseconds = -(-micros // 1000) if round_up else micros // 1000
    return floor_id(ID_PREFIX, milliseconds)


def _text_match(query: Query) -> sa.ColumnElement[bool]:
    """Case-insensitive containment (ASCII case on SQLite), with the search endpoints' syntax: every group
    must match one of its phrases, no excluded phrase may. Logs are matched as text, not by stem, and a
    word keeps its punctuation: a log line's words are identifiers and codes as often as English."""
    message = sa.func.lower(t.message)

    def contains(phrase: Phrase) -> sa.ColumnElement[bool]:
        return message.contains(" ".join(phrase.words), autoescape=True)

    matched = [sa.or_(*(contains(p) for p in group)) for group in query.groups]
    return sa.and_(*matched, *(sa.not_(contains(p)) for p in query.excluded))


class LogRepository:
    """The log records of one organization."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def list_page(
        self, filters: LogFilters, params: CursorParams
    ) -> tuple[list[LogRecordOut], str | None]:
        """Newest first."""
        keyed = filters.key_conditions(self._organization_id)
        if params.after_id is not None:
            keyed.append(t.id < params.after_id)
        checked = filters.row_conditions()
        boundary = None
        if checked:
            window = sa.select(t.id).where(*keyed).order_by(t.id.desc()).offset(SCAN_WINDOW - 1).limit(1)
            boundary = (await self._conn.execute(window)).scalar_one_or_none()
            if boundary is not None:
                keyed.append(t.id >= boundary)
        query = sa.select(log_records).where(*keyed, *checked).order_by(t.id.desc()).limit(params.limit + 1)
        rows = (await self._conn.execute(query)).mappings().all()
        records = [_record(row) for row in rows[: params.limit]]
        if len(rows) > params.limit:
            return records, encode_cursor(records[-1].id)
        return records, None if boundary is None else encode_cursor(boundary)

    async def volume_by_level(
        self, filters: LogFilters, buckets: TimeBuckets, cap: int = SCAN_WINDOW
    ) -> tuple[dict[tuple[int, str], int], datetime | None]:
        """Records matching ``filters`` by time bucket and level, over the newest ``cap`` of them in the
        buckets' time at most (a range of the primary key, the other filters checked on it, as a page
        is): counted by the database, one row per bucket and level. The second value, when the cap was
        reached, is the time of the oldest record counted: before it there are records not counted."""
        newest = (
            sa.select(t.id, t.level)
            .where(
                *filters.key_conditions(self._organization_id),
                *buckets.range_of(t.id, ID_PREFIX),
                *filters.row_conditions(),
            )
            .order_by(t.id.desc())
            .limit(cap)
            .subquery()
        )
        bucket = buckets.index_of(newest.c.id, ID_PREFIX).label("bucket")
        query = sa.select(
            bucket, newest.c.level, sa.func.count().label("n"), sa.func.min(newest.c.id).label("oldest")
        ).group_by(bucket, newest.c.level)
        rows = list((await self._conn.execute(query)).mappings())
        counts = {(int(row["bucket"]), str(row["level"])): int(row["n"]) for row in rows}
        if sum(counts.values()) < cap:
            return counts, None
        oldest = min(str(row["oldest"]) for row in rows)
        return counts, _EPOCH + timedelta(milliseconds=id_time_ms(ID_PREFIX, oldest))

    async def newest_of_level(
        self, level: Level, since: datetime, limit: int, window: int = SCAN_WINDOW
    ) -> list[LogRecordOut]:
        """The newest ``limit`` records of ``level`` received since ``since``, among the newest ``window``
        records: the primary key is walked newest first and the walk stops at the ``limit``-th match, so
        the cost is the records passed over (a handful where errors are common), never past ``window``."""
        newest = (
            sa.select(log_records)
            .where(*LogFilters(since=since).key_conditions(self._organization_id))
            .order_by(t.id.desc())
            .limit(window)
            .subquery()
        )
        # No outer ORDER BY: it could make the database sort the whole window before the LIMIT. The window
        # streams newest first; the few rows found are put in order here.
        query = sa.select(newest).where(newest.c.level == level).limit(limit)
        found = [_record(row) for row in (await self._conn.execute(query)).mappings()]
        return sorted(found, key=lambda record: record.id, reverse=True)

    async def get(self, record_id: str) -> LogRecordOut | None:
        query = sa.select(log_records).where(t.organization_id == self._organization_id, t.id == record_id)
        row = (await self._conn.execute(query)).mappings().first()
        return _record(row) if row else None

    async def newest_id(self) -> str | None:
        query = sa.select(sa.func.max(t.id)).where(t.organization_id == self._organization_id)
        return (await self._conn.execute(query)).scalar_one_or_none()

    async def after(self, filters: LogFilters, after_id: str) -> tuple[list[LogRecordOut], str, bool]:
        """For the live tail: matching records after ``after_id``, oldest first, the position to resume
        from (past the records that did not match, so they are not examined again), and whether more may
        follow that position already (a step stopped at its window or its batch)."""
        keyed = [*filters.key_conditions(self._organization_id), t.id > after_id]
        # At most SCAN_WINDOW records are examined per step, as for a page: a tail that starts far back
        # with a rare filter catches up in bounded steps instead of one long query.
        window = sa.select(t.id).where(*keyed).order_by(t.id).offset(SCAN_WINDOW - 1).limit(1)
        newest = (await self._conn.execute(window)).scalar_one_or_none()
        windowed = newest is not None
        if newest is None:
            newest = (
                await self._conn.execute(sa.select(sa.func.max(t.id)).where(*keyed))
            ).scalar_one_or_none()
        if newest is None:
            return [], after_id, False
        query = (
            sa.select(log_records)
            .where(*keyed, t.id <= newest, *filters.row_conditions())
            .order_by(t.id.asc())
            .limit(_TAIL_BATCH)
        )
        records = [_record(row) for row in (await self._conn.execute(query)).mappings().all()]
        if len(records) == _TAIL_BATCH:
            return records, records[-1].id, True
        return records, newest, windowed

    async def delete_received_before(self, cutoff: datetime) -> int:
        """One batch of an organization's records received before ``cutoff``; the caller repeats until 0, so
        no single transaction holds the write lock for long."""
        doomed = (
            sa.select(t.id, t.project_id, t.level, t.kind, t.received_at)
            .where(t.organization_id == self._organization_id, t.id < _floor(cutoff), t.received_at < cutoff)
            .order_by(t.id)
            .limit(_DELETE_BATCH)
        )
        rows = (await self._conn.execute(doomed)).all()
        if not rows:
            return 0
        ids = [row.id for row in rows]
        # The hours' counts go down in the deleting transaction: the chart never counts what is gone.
        keys = ((self._organization_id, r.project_id, r.level, r.kind, hour_of(r.received_at)) for r in rows)
        fewer = [
            {**{f"k_{name}": value for name, value in zip(_COUNTED, key, strict=True)}, "k_records": n}
            for key, n in Counter(keys).items()
        ]
        await self._conn.execute(_SUBTRACT, fewer)
        result = await self._conn.execute(
            sa.delete(log_records).where(
                t.organization_id == self._organization_id,
                t.id >= ids[0],
                t.id <= ids[-1],
                t.received_at < cutoff,
            )
        )
        return int(result.rowcount)


def _record(row: sa.RowMapping) -> LogRecordOut:
    return LogRecordOut(
        id=row["id"],
        project_id=row["project_id"],
        kind=row["kind"],
        message=row["message"],
        level=row["level"],
        timestamp=row["timestamp"],
        attributes=row["attributes"],
        trace_id=row["trace_id"],
        span_id=row["span_id"],
        received_at=row["received_at"],
        name=row["name"],
        properties=row["properties"],
        distinct_id=row["distinct_id"],
    )


def position_before(moment: datetime) -> str:
    """A tail position just before every record received at or after ``moment``."""
    return _floor(moment)
