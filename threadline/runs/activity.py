"""An organization's runs over time, for the overview's charts: how many started, by status, and the tokens
they used, per time bucket (``kit.timebuckets``), counted by the database in one aggregate query."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.timebuckets import TimeBuckets
from threadline.runs.tables import runs

_PREFIX = "run"


@dataclass(frozen=True, slots=True)
class Activity:
    """``runs``: (bucket, status) -> runs created in the bucket; ``tokens``: bucket -> their tokens, input
    and output. ``capped``: the newest ``cap`` runs of the buckets' time were counted, and there are more."""

    runs: dict[tuple[int, str], int]
    tokens: dict[int, int]
    capped: bool


class RunActivity:
    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def by_bucket(self, buckets: TimeBuckets, cap: int) -> Activity:
        """Over the newest ``cap`` runs created in the buckets' time at most: a range of the
        (organization, id) index, as the overview's other counts."""
        newest = (
            sa.select(runs.c.id, runs.c.status, (runs.c.input_tokens + runs.c.output_tokens).label("tokens"))
            .where(runs.c.organization_id == self._organization_id, *buckets.range_of(runs.c.id, _PREFIX))
            .order_by(runs.c.id.desc())
            .limit(cap)
            .subquery()
        )
        bucket = buckets.index_of(newest.c.id, _PREFIX).label("bucket")
        query = sa.select(
            bucket, newest.c.status, sa.func.count().label("n"), sa.func.sum(newest.c.tokens).label("tokens")
        ).group_by(bucket, newest.c.status)
        counted: dict[tuple[int, str], int] = {}
        tokens: dict[int, int] = {}
        for row in (await self._conn.execute(query)).mappings():
            counted[(int(row["bucket"]), str(row["status"]))] = int(row["n"])
            tokens[int(row["bucket"])] = tokens.get(int(row["bucket"]), 0) + int(row["tokens"] or 0)
        return Activity(counted, tokens, sum(counted.values()) >= cap)
