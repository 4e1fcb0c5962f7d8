"""An organization's runs over time, for the overview's charts: how many were created, by their status now,
and the tokens they used, per time bucket (``kit.timebuckets``) of whole hours, read from the hourly counts
(``run_counts``, kept by triggers on ``runs``): exact, and costing the hours read, not the runs they hold."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.hours import HOUR, hour_of
from threadline.kit.timebuckets import TimeBuckets
from threadline.runs.tables import run_counts

c = run_counts.c


@dataclass(frozen=True, slots=True)
class Activity:
    """``runs``: (bucket, status) -> runs created in the bucket; ``tokens``: bucket -> the tokens, input
    and output, of those that have ended (a running run's count once it ends)."""

    runs: dict[tuple[int, str], int]
    tokens: dict[int, int]


class RunActivity:
    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def by_bucket(self, buckets: TimeBuckets) -> Activity:
        """One row per hour and status (a range of the counts' primary key). The buckets must be whole
        hours (the counts are hourly): a ValueError otherwise."""
        if buckets.step % HOUR or buckets.start.minute or buckets.start.second or buckets.start.microsecond:
            raise ValueError("run activity is counted by whole hours")
        first = hour_of(buckets.start)
        step = buckets.step // HOUR
        query = (
            sa.select(c.hour, c.status, sa.func.sum(c.runs).label("n"), sa.func.sum(c.tokens).label("tokens"))
            .where(
                c.organization_id == self._organization_id,
                c.hour >= first,
                c.hour < first + step * buckets.count,
            )
            .group_by(c.hour, c.status)
        )
        counted: dict[tuple[int, str], int] = {}
        tokens: dict[int, int] = {}
        for row in (await self._conn.execute(query)).mappings():
            bucket = (int(row["hour"]) - first) // step
            if int(row["n"]):
                key = (bucket, str(row["status"]))
                counted[key] = counted.get(key, 0) + int(row["n"])
            if int(row["tokens"] or 0):
                tokens[bucket] = tokens.get(bucket, 0) + int(row["tokens"])
        return Activity(counted, tokens)
