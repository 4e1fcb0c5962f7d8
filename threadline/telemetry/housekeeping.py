"""Telemetry housekeeping, run at start and then hourly: each organization's records received more than
its ``logRetentionDays`` ago are forgotten.

How is the backend's (a ``Retention``, chosen by the composition root): on SQLite, deleted in batches (no
long write lock), ``DeletingRetention``; on PostgreSQL, where records live in one partition per day of
receipt, a day past every organization's retention is dropped whole and the next days' partitions are
made ahead, before the same deletes (``telemetry.partitions``). Every step is idempotent, so processes
that run it at the same time only repeat each other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import sqlalchemy as sa

from threadline.kit.clock import Clock
from threadline.kit.db import Conn, Database
from threadline.kit.waiting import every
from threadline.organizations.tables import organizations
from threadline.settings.service import DEFAULT_LOG_RETENTION_DAYS
from threadline.telemetry import repository

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 3600.0


@dataclass(slots=True)
class Report:
    deleted: dict[str, int] = field(default_factory=dict)
    created_partitions: list[str] = field(default_factory=list)
    dropped_partitions: list[str] = field(default_factory=list)


class Retention(Protocol):
    async def run_once(self, now: datetime) -> Report: ...


async def run_once(retention: Retention, now: datetime) -> Report:
    return await retention.run_once(now)


async def run_periodically(retention: Retention, clock: Clock, interval: float = INTERVAL_SECONDS) -> None:
    """Until cancelled; started by the background chores (``threadline.chores``)."""
    await every(interval, lambda: run_once(retention, clock.now()), "telemetry housekeeping")


class DeletingRetention:
    """Retention by batched deletes: all of it on SQLite."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def run_once(self, now: datetime) -> Report:
        report = Report()
        async with self.db.transaction(write=False) as conn:
            retention = await _retention_days(conn)
        await self._before_deleting(now, max(retention.values(), default=None), report)
        for organization_id, days in retention.items():
            cutoff = now - timedelta(days=days)
            while True:
                async with self.db.transaction() as conn:
                    deleted = await repository.LogRepository(conn, organization_id).delete_received_before(
                        cutoff
                    )
                if not deleted:
                    break
                report.deleted[organization_id] = report.deleted.get(organization_id, 0) + deleted
        if report.deleted or report.dropped_partitions:
            log.info(
                "log retention: deleted %d records, dropped partitions %s",
                sum(report.deleted.values()),
                report.dropped_partitions,
            )
        return report

    async def _before_deleting(self, now: datetime, keep_days: int | None, report: Report) -> None:
        """Nothing here; ``keep_days``: the longest retention of any organization, if there is one."""


async def _retention_days(conn: Conn) -> dict[str, int]:
    days = sa.func.coalesce(organizations.c.log_retention_days, DEFAULT_LOG_RETENTION_DAYS)
    rows = (await conn.execute(sa.select(organizations.c.id, days.label("days")))).mappings().all()
    return {row["id"]: int(row["days"]) for row in rows}
