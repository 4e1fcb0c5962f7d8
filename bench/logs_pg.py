"""Log reads and retention at 10,000,000 records on PostgreSQL: ``python bench/logs_pg.py``.

What the issue asks to show: logs stored so that retention is cheap and a time-range read stays fast at
10 million rows. The run seeds one organization with ``--rows`` records spread evenly over ``--days`` days
of receipt (one daily partition each, as housekeeping makes them), then measures, in process, the
repository calls ``GET /v1/logs`` makes (SQL, rows to response models; no HTTP):

- a time-range read: a page of 50, newest first, within a random one-hour window;
- the same with ``level=error`` (a filter the key does not cover: a bounded scan of the window);
- the newest page (no range), and a ``q`` text filter over a one-hour window;
- as the baseline, the same queries when the table holds 1/100 of the rows: "stays fast" is the ratio.

Retention: dropping one day's partition (what housekeeping does once every organization's retention has
passed the day) against deleting one day's records with the batched DELETE housekeeping uses for an
organization whose retention is shorter, both timed in the same run on days of equal size.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
import statistics
import sys
import time
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path
from typing import Any

import asyncpg
import sqlalchemy as sa
from harness import RESULTS_DIR, BenchError, format_table, postgres_database, run_main

from threadline.config import normalize_database_url
from threadline.kit.db import Database
from threadline.kit.ids import id_at
from threadline.kit.pagination import CursorParams
from threadline.search.query import parse
from threadline.storage.migrate import upgrade
from threadline.telemetry import housekeeping, partitions, repository
from threadline.telemetry.repository import LogFilters

LEVELS = ("debug", "info", "info", "info", "info", "warn", "error")
ROUTES = ("/checkout", "/login", "/search", "/api/orders", "/api/users", "/health")
PAGE = CursorParams(limit=50, after_id=None)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--rows", type=int, default=10_000_000, help="records seeded")
    parser.add_argument("--days", type=int, default=10, help="days of receipt they are spread over")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind and size")
    parser.add_argument(
        "--pg-admin-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a database to connect to while creating and dropping the benchmark's own",
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "logs_pg.json", help="results JSON")
    args = parser.parse_args()
    if args.rows < 100_000 or args.days < 3 or args.queries < 10:
        parser.error("--rows >= 100000, --days >= 3, --queries >= 10")
    return args


def midnight(day: date) -> datetime:
    return datetime.combine(day, clock_time(), UTC)


async def seed(
    url: str, organization: str, project: str, rows: int, first_day: date, days: int, offset: int
) -> None:
    """COPY ``rows`` records, evenly spaced in receipt time over the days, ids made as the writer makes
    them (time of receipt, then a unique tail) so every key range the reads use is realistic."""
    span_ms = days * 86_400_000
    start_ms = int(midnight(first_day).timestamp() * 1000)
    conn = await asyncpg.connect(url)
    try:
        chunk = 200_000
        for begin in range(0, rows, chunk):
            records = []
            for n in range(begin, min(begin + chunk, rows)):
                ms = start_ms + n * span_ms // rows
                moment = datetime.fromtimestamp(ms / 1000, UTC)
                level = LEVELS[n % len(LEVELS)]
                route = ROUTES[n % len(ROUTES)]
                message = f"{route} handled in {n % 997} ms for user {n % 50_000}"
                if level == "error":
                    message = f"{route} failed: upstream timeout after {n % 30} s"
                records.append(
                    (organization, id_at("log", ms, offset + n), moment, project, "log", level, message,
                     moment, f'{{"route": "{route}"}}')
                )  # fmt: skip
            await conn.copy_records_to_table(
                "log_records",
                records=records,
                columns=[
                    "organization_id", "id", "received_at", "project_id", "kind", "level", "message",
                    "timestamp", "attributes",
                ],
            )  # fmt: skip
            print(f"\r  seeded {min(begin + chunk, rows):,}/{rows:,}", end="", file=sys.stderr)
        print(file=sys.stderr)
        await conn.execute("ANALYZE log_records")
    finally:
        await conn.close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure_reads(
    db: Database, organization: str, first_day: date, days: int, queries: int, seed_value: int
) -> dict[str, dict[str, float]]:
    rng = random.Random(seed_value)
    span = timedelta(days=days) - timedelta(hours=1)
    kinds: dict[str, Any] = {
        "range 1 h": lambda since: LogFilters(since=since, until=since + timedelta(hours=1)),
        "range 1 h, level=error": lambda since: LogFilters(
            since=since, until=since + timedelta(hours=1), level="error"
        ),
        "range 1 h, q=timeout": lambda since: LogFilters(
            since=since, until=since + timedelta(hours=1), query=parse("timeout")
        ),
        "newest page": lambda _since: LogFilters(),
    }
    results: dict[str, dict[str, float]] = {}
    for name, make in kinds.items():
        timings = []
        for _ in range(queries):
            since = midnight(first_day) + span * rng.random()
            started = time.perf_counter()
            async with db.transaction(write=False) as conn:
                records, _ = await repository.LogRepository(conn, organization).list_page(make(since), PAGE)
            timings.append((time.perf_counter() - started) * 1000)
            if not records:
                raise BenchError(f"{name}: an empty page at {since}; the seed does not cover the range")
        results[name] = {
            "p50_ms": statistics.median(timings),
            "p99_ms": percentile(timings, 0.99),
        }
    return results


async def explain(url: str, organization: str, since: datetime) -> list[str]:
    """The plan of a one-hour range read: it should touch one partition, through the primary key."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "EXPLAIN SELECT * FROM log_records WHERE organization_id = $1 AND received_at >= $2 "
            "AND received_at < $3 AND id >= $4 AND id < $5 ORDER BY id DESC LIMIT 51",
            organization,
            since,
            since + timedelta(hours=1),
            id_at("log", int(since.timestamp() * 1000), 0),
            id_at("log", int((since + timedelta(hours=1)).timestamp() * 1000), 0),
        )
    finally:
        await conn.close()
    return [row[0] for row in rows]


async def prepare(url: str, first_day: date, days: int) -> tuple[Database, str, str]:
    await asyncio.to_thread(upgrade, normalize_database_url(url))  # alembic runs a loop of its own
    db = Database(normalize_database_url(url))
    for offset in range(days + 1):
        if not await partitions.create_partition(db, first_day + timedelta(days=offset)):
            raise BenchError("could not create the daily partitions")
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "INSERT INTO organizations (id, name, created_at, updated_at, billing_enforced) "
            "VALUES ('org_bench', 'bench', now(), now(), false)"
        )
        await conn.execute(
            "INSERT INTO projects (id, organization_id, name, created_at) "
            "VALUES ('proj_bench', 'org_bench', 'bench', now())"
        )
    finally:
        await conn.close()
    return db, "org_bench", "proj_bench"


async def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    today = datetime.now(UTC).date()
    first_day = today - timedelta(days=args.days)
    db, organization, project = await prepare(url, first_day, args.days)
    try:
        small = args.rows // 100
        started = time.perf_counter()
        await seed(url, organization, project, small, first_day, args.days, 0)
        reads_small = await measure_reads(db, organization, first_day, args.days, args.queries, 1)
        await seed(url, organization, project, args.rows - small, first_day, args.days, small)
        seeded_seconds = time.perf_counter() - started
        reads_full = await measure_reads(db, organization, first_day, args.days, args.queries, 1)
        plan = await explain(url, organization, midnight(first_day) + timedelta(days=1, hours=5))

        # Retention on two days of equal size. First the DROP: with a one-day retention, housekeeping at
        # the start of day 3 drops day 1's partition. Then the batched DELETE of day 2's records.
        async with db.transaction() as conn:
            await conn.execute(sa.text("UPDATE organizations SET log_retention_days = 1"))
        started = time.perf_counter()
        report = await housekeeping.run_once(
            partitions.PartitionedRetention(db), now=midnight(first_day + timedelta(days=2))
        )
        drop_seconds = time.perf_counter() - started
        started = time.perf_counter()
        deleted = 0
        while True:
            async with db.transaction() as conn:
                batch = await repository.LogRepository(conn, organization).delete_received_before(
                    midnight(first_day + timedelta(days=2))
                )
            if not batch:
                break
            deleted += batch
        delete_seconds = time.perf_counter() - started
    finally:
        await db.dispose()
    if partitions.partition_name(first_day) not in report.dropped_partitions:
        raise BenchError(f"housekeeping did not drop the first day: {report}")
    per_day = args.rows // args.days
    return {
        "rows": args.rows,
        "seed_seconds": round(seeded_seconds, 1),
        "reads": {"at_1_percent": reads_small, "at_full_size": reads_full},
        "plan_one_hour_range": plan,
        "retention": {
            "rows_per_day": per_day,
            "batched_delete_of_one_day": {"rows": deleted, "seconds": delete_seconds},
            "drop_partition_of_one_day": {"seconds": drop_seconds, "report": report.dropped_partitions},
        },
    }


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    url = stack.enter_context(postgres_database(args.pg_admin_url, "logs"))
    results = asyncio.run(run(args, url))
    return {
        "benchmark": "log reads and retention on PostgreSQL",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        **results,
    }


def report(results: dict[str, Any]) -> str:
    small, full = results["reads"]["at_1_percent"], results["reads"]["at_full_size"]
    rows = [
        [name, f"{small[name]['p50_ms']:.2f}", f"{small[name]['p99_ms']:.2f}", f"{full[name]['p50_ms']:.2f}",
         f"{full[name]['p99_ms']:.2f}", f"{full[name]['p99_ms'] / small[name]['p99_ms']:.2f}"]
        for name in full
    ]  # fmt: skip
    count = f"{results['rows']:,}"
    table = format_table(
        ["read (page of 50)", "p50 1%", "p99 1%", f"p50 {count}", f"p99 {count}", "p99 ratio"], rows
    )
    retention = results["retention"]
    delete = retention["batched_delete_of_one_day"]
    drop = retention["drop_partition_of_one_day"]
    lines = [
        table,
        "",
        "plan of a one-hour range read:",
        *("  " + line for line in results["plan_one_hour_range"]),
        "",
        f"retention of one day ({retention['rows_per_day']:,} records): batched DELETE "
        f"{delete['seconds']:.2f} s ({delete['rows']:,} rows), DROP of its partition {drop['seconds']:.3f} s "
        f"-> {delete['seconds'] / max(drop['seconds'], 1e-6):.0f}x",
    ]
    return "\n".join(lines)


def main() -> int:
    return run_main(parse_args(), benchmark, report, (asyncpg.PostgresError, OSError))


if __name__ == "__main__":
    sys.exit(main())
