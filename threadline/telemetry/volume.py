"""Log volume by time bucket and level, for the logs page's chart: exact, from the hourly counts
(``log_counts``) where the filters allow, else counted from the records over a bounded window.

The counts answer the organization, project, level and kind filters over whole hours. A window that
starts or ends inside an hour has its partial hours counted from the records (at most ``cap`` each, a
range of the primary key); a text query (``q``), or buckets shorter than an hour (windows of a day or
less), can only be answered by the records: the newest ``cap`` of the window are counted, and the result
says how far back that reached, as before the counts existed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.hours import HOUR, hour_of, start_of
from threadline.kit.timebuckets import TimeBuckets
from threadline.telemetry.repository import LogFilters, LogRepository
from threadline.telemetry.schemas import levels_at_or_above
from threadline.telemetry.tables import log_counts

c = log_counts.c


@dataclass(frozen=True, slots=True)
class Volume:
    """``counts``: (bucket, level) -> records. ``partial``: the time counted from the records with the cap
    reached, as (from, to) where ``from`` is the oldest record counted: before it, within ``to``, some
    matching records are not counted. ``exact_hours``: the whole hours came from the counts."""

    counts: dict[tuple[int, str], int]
    partial: tuple[datetime, datetime] | None
    exact_hours: bool


def floor_hour(moment: datetime) -> datetime:
    return start_of(hour_of(moment))


def ceil_hour(moment: datetime) -> datetime:
    floor = floor_hour(moment)
    return floor if floor == moment else floor + HOUR


async def volume(
    conn: Conn, organization_id: str, filters: LogFilters, buckets: TimeBuckets, cap: int
) -> Volume:
    """The records ``filters`` select in the buckets' time, per bucket and level."""
    records = LogRepository(conn, organization_id)
    if filters.query is not None or buckets.step % HOUR:
        counts, oldest = await records.volume_by_level(filters, buckets, cap)
        until = min(filters.until or buckets.end, buckets.end)
        return Volume(counts, None if oldest is None else (oldest, until), exact_hours=False)
    start = max(filters.since or buckets.start, buckets.start)
    end = min(filters.until or buckets.end, buckets.end)
    first, last = ceil_hour(start), floor_hour(end)
    counts = await _hourly(conn, organization_id, filters, buckets, first, last)
    partial = None
    for since, until in ((start, min(first, end)), (max(last, start, first), end)):
        if since >= until:
            continue
        edge, oldest = await records.volume_by_level(replace(filters, since=since, until=until), buckets, cap)
        for key, n in edge.items():
            counts[key] = counts.get(key, 0) + n
        if oldest is not None:
            partial = (oldest, until)
    return Volume(counts, partial, exact_hours=True)


async def _hourly(
    conn: Conn,
    organization_id: str,
    filters: LogFilters,
    buckets: TimeBuckets,
    first: datetime,
    last: datetime,
) -> dict[tuple[int, str], int]:
    """The counts of the whole hours ``first``..``last`` (one row per hour and level, a range of the
    counts' primary key), put in their buckets."""
    conditions = [c.organization_id == organization_id, c.hour >= hour_of(first), c.hour < hour_of(last)]
    if filters.project_id is not None:
        conditions.append(c.project_id == filters.project_id)
    if filters.level is not None and filters.level != "trace":
        conditions.append(c.level.in_(levels_at_or_above(filters.level)))
    if filters.kind is not None:
        conditions.append(c.kind == filters.kind)
    query = (
        sa.select(c.hour, c.level, sa.func.sum(c.records).label("n"))
        .where(*conditions)
        .group_by(c.hour, c.level)
    )
    counts: dict[tuple[int, str], int] = {}
    step = buckets.step // HOUR
    offset = hour_of(buckets.start)
    for row in (await conn.execute(query)).mappings():
        n = int(row["n"])
        if n:
            key = ((int(row["hour"]) - offset) // step, str(row["level"]))
            counts[key] = counts.get(key, 0) + n
    return counts
