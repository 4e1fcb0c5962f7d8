"""PostgreSQL's retention: ``log_records`` is partitioned by day of receipt (migration 0003), so a day that
every organization's retention has passed is dropped whole (a catalogue change, however many rows it
held), and the next days' partitions are created ahead so new records never land in the default
partition. What no dropped day took is deleted as on SQLite (``housekeeping.DeletingRetention``). Either
way the hourly counts (``log_counts``) go down in the transaction that removes the records."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from threadline.kit.db import Conn, Database
from threadline.kit.hours import hour_of
from threadline.telemetry.housekeeping import DeletingRetention, Report
from threadline.telemetry.tables import log_counts

log = logging.getLogger(__name__)

# Partition DDL takes strong locks on log_records (and a foreign key's on projects): waiting behind a long
# query would queue every insert and read behind it, so it gives up after two seconds and retries next run.
_LOCK_TIMEOUT = sa.text("SET LOCAL lock_timeout = '2s'")
DAYS_AHEAD = 3
_PARTITION = "log_records_p"


class PartitionedRetention(DeletingRetention):
    async def _before_deleting(self, now: datetime, keep_days: int | None, report: Report) -> None:
        db = self.db
        async with db.transaction(write=False) as conn:
            present = await existing(conn)
        today = now.date()
        for offset in range(DAYS_AHEAD + 1):
            day = today + timedelta(days=offset)
            if partition_name(day) not in present and await create_partition(db, day):
                report.created_partitions.append(partition_name(day))
        if keep_days is None:
            return
        oldest_kept = today - timedelta(days=keep_days)
        for name in sorted(present):
            partition_day = _day_of(name)
            # Droppable once the whole day is past every organization's retention.
            if partition_day is not None and partition_day < oldest_kept:
                try:
                    async with db.transaction() as conn:
                        await conn.execute(_LOCK_TIMEOUT)
                        await conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))
                        await conn.execute(_forget_counts(partition_day))
                except sa.exc.DBAPIError:  # busy (lock timeout): the next run drops it
                    log.warning("could not drop log partition %s", name, exc_info=True)
                    continue
                report.dropped_partitions.append(name)


def _forget_counts(day: date) -> sa.Delete:
    """The hourly counts of a dropped day, every organization's (as the partition held them all): gone in
    the same transaction as its records, so the chart never counts them."""
    first = hour_of(datetime.combine(day, time(), UTC))
    return sa.delete(log_counts).where(log_counts.c.hour >= first, log_counts.c.hour < first + 24)


def partition_name(day: date) -> str:
    return f"{_PARTITION}{day:%Y%m%d}"


def _day_of(name: str) -> date | None:
    try:
        return datetime.strptime(name[len(_PARTITION) :], "%Y%m%d").replace(tzinfo=UTC).date()
    except ValueError:
        return None


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


async def existing(conn: Conn) -> set[str]:
    """The daily partitions there are."""
    rows = await conn.execute(
        sa.text(
            "SELECT child.relname FROM pg_inherits "
            "JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
            "JOIN pg_class parent ON parent.oid = pg_inherits.inhparent "
            "WHERE parent.relname = 'log_records'"
        )
    )
    return {str(row[0]) for row in rows if str(row[0]).startswith(_PARTITION)}
