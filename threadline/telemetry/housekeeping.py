"""Telemetry housekeeping, run by every serving process at start and then hourly: retention, and on
PostgreSQL the daily partitions of ``log_records``.

Retention deletes each organization's records received more than its ``logRetentionDays`` ago, in
batches (no long write lock). On PostgreSQL, records live in one partition per day of receipt: a day that
every organization's retention has passed is dropped whole (a catalogue change, however many rows it
held), and the next days' partitions are created ahead so new records never land in the default
partition. Every step is idempotent, so processes that run it at the same time only repeat each other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from threadline.kit.clock import utcnow
from threadline.kit.db import Conn, Database
from threadline.kit.waiting import every
from threadline.organizations.tables import organizations
from threadline.settings.service import DEFAULT_LOG_RETENTION_DAYS
from threadline.telemetry import repository

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 3600.0
# Partition DDL takes strong locks on log_records (and a foreign key's on projects): waiting behind a long
# query would queue every insert and read behind it, so it gives up after two seconds and retries next run.
_LOCK_TIMEOUT = sa.text("SET LOCAL lock_timeout = '2s'")
DAYS_AHEAD = 3
_PARTITION = "log_records_p"


@dataclass(slots=True)
class Report:
    deleted: dict[str, int] = field(default_factory=dict)
    created_partitions: list[str] = field(default_factory=list)
    dropped_partitions: list[str] = field(default_factory=list)


async def run_once(db: Database, now: datetime | None = None) -> Report:
    now = now or utcnow()
    report = Report()
    async with db.transaction(write=False) as conn:
        retention = await _retention_days(conn)
    if db.dialect_name == "postgresql":
        await _maintain_partitions(db, now, max(retention.values(), default=None), report)
    for organization_id, days in retention.items():
        cutoff = now - timedelta(days=days)
        while True:
            async with db.transaction() as conn:
                deleted = await repository.LogRepository(conn, organization_id).delete_received_before(cutoff)
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


async def run_periodically(db: Database, interval: float = INTERVAL_SECONDS) -> None:
    """Until cancelled; started by ``serve``."""
    await every(interval, lambda: run_once(db), "telemetry housekeeping")


async def _retention_days(conn: Conn) -> dict[str, int]:
    days = sa.func.coalesce(organizations.c.log_retention_days, DEFAULT_LOG_RETENTION_DAYS)
    rows = (await conn.execute(sa.select(organizations.c.id, days.label("days")))).mappings().all()
    return {row["id"]: int(row["days"]) for row in rows}


def partition_name(day: date) -> str:
    return f"{_PARTITION}{day:%Y%m%d}"


def _day_of(name: str) -> date | None:
    try:
        return datetime.strptime(name[len(_PARTITION) :], "%Y%m%d").replace(tzinfo=UTC).date()
    except ValueError:
        return None


async def _maintain_partitions(db: Database, now: datetime, keep_days: int | None, report: Report) -> None:
    async with db.transaction(write=False) as conn:
        existing = await partitions(conn)
    today = now.date()
    for offset in range(DAYS_AHEAD + 1):
        day = today + timedelta(days=offset)
        if partition_name(day) not in existing and await create_partition(db, day):
            report.created_partitions.append(partition_name(day))
    if keep_days is None:
        return
    oldest_kept = today - timedelta(days=keep_days)
    for name in sorted(existing):
        partition_day = _day_of(name)
        # Droppable once the whole day is past every organization's retention.
        if partition_day is not None and partition_day < oldest_kept:
            try:
                async with db.transaction() as conn:
                    await conn.execute(_LOCK_TIMEOUT)
                    await conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))
            except sa.exc.DBAPIError:  # busy (lock timeout): the next run drops it
                log.warning("could not drop log partition %s", name, exc_info=True)
                continue
            report.dropped_partitions.append(name)


async def create_partition(db: Database, day: date) -> bool:
    """The partition for records received on ``day`` (UTC); False if it could not be made."""
    start = datetime.combine(day, time(), UTC)
    bounds = f"FROM ('{start.isoformat()}') TO ('{(start + timedelta(days=1)).isoformat()}')"
    try:
        async with db.transaction() as conn:
            await conn.execute(_LOCK_TIMEOUT)
            await conn.execute(
                sa.text(
                    f"CREATE TABLE IF NOT EXISTS {partition_name(day)} PARTITION OF log_records "
                    f"FOR VALUES {bounds}"
                )
            )
    except sa.exc.DBAPIError:
        # Another process created it meanwhile, or the default partition already holds rows of that day
        # (housekeeping did not run for days): those rows stay there, and retention deletes them.
        log.warning("could not create log partition %s", partition_name(day), exc_info=True)
        return False
    return True


async def partitions(conn: Conn) -> set[str]:
    rows = await conn.execute(
        sa.text(
            "SELECT child.relname FROM pg_inherits "
            "JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
            "JOIN pg_class parent ON parent.oid = pg_inherits.inhparent "
            "WHERE parent.relname = 'log_records'"
        )
    )
    return {str(row[0]) for row in rows if str(row[0]).startswith(_PARTITION)}
