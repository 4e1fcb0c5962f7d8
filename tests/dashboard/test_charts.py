"""The dashboard's charts count what the pages select, in the right buckets, for the right organization:
log volume by level on /logs (its filters and window), runs and tokens per hour on the overview, the
balance per day on billing. Each chart's numbers are read from its table (what a screen reader reads)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from tests.dashboard.support import Dashboard
from tests.runs.helpers import start_run, wait_for_status
from tests.support import Tenant, make_thread
from threadline.billing.ledger import LedgerRepository
from threadline.kit.ids import id_at
from threadline.kit.timebuckets import TimeBuckets
from threadline.runtime import Services
from threadline.telemetry.repository import LogFilters, LogRepository
from threadline.telemetry.tables import log_records

WINDOW = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)  # six hours from here: hourly buckets


def chart_rows(html: str, chart_id: str) -> dict[str, list[int]]:
    """The chart's table: each bucket's label and its numbers."""
    figure = html[html.index(f'id="{chart_id}"') :]
    figure = figure[: figure.index("</figure>")]
    rows = re.findall(r'<tr><th scope="row">([^<]+)</th>(.*?)</tr>', figure)
    return {
        label: [int(v.replace(",", "") or 0) for v in re.findall(r'<td class="num">([^<]*)</td>', cells)]
        for label, cells in rows
    }


async def seed(services: Services, tenant: Tenant, *records: tuple[int, str, str]) -> None:
    """Records received ``minutes`` after WINDOW's start, with a level and a message."""
    rows = []
    for n, (minutes, level, message) in enumerate(records):
        at = WINDOW + timedelta(minutes=minutes)
        rows.append(
            {
                "organization_id": tenant.org_id,
                "id": id_at("log", int(at.timestamp() * 1000), n),
                "received_at": at,
                "project_id": tenant.project_id,
                "kind": "log",
                "level": level,
                "message": message,
                "timestamp": at,
                "attributes": {},
            }
        )
    async with services.db.transaction() as conn:
        await conn.execute(sa.insert(log_records), rows)


async def test_log_volume_follows_the_filters_and_window(
    dashboard: Dashboard, services: Services, tenant: Tenant, other_tenant: Tenant
) -> None:
    await seed(
        services,
        tenant,
        (5, "info", "checkout ok"),
        (10, "info", "checkout ok"),
        (15, "error", "checkout failed"),
        (70, "warn", "slow login"),
        (200, "error", "login failed"),
        (400, "info", "outside the window"),
    )
    await seed(services, other_tenant, (5, "error", "checkout failed"), (6, "error", "checkout failed"))
    window = "since=2026-01-05T00:00&until=2026-01-05T06:00"

    page = await dashboard.get(f"/logs?{window}")
    assert page.status_code == 200
    rows = chart_rows(page.text, "volume-chart")
    # Columns: trace, debug, info, warn, error, fatal; a row per quarter of an hour (six hours, at most 48).
    assert list(rows) == [f"Jan 05 {m // 60:02d}:{m % 60:02d}" for m in range(0, 360, 15)]
    assert rows["Jan 05 00:00"] == [0, 0, 2, 0, 0, 0]
    assert rows["Jan 05 00:15"] == [0, 0, 0, 0, 1, 0]
    assert rows["Jan 05 01:00"] == [0, 0, 0, 1, 0, 0]
    assert rows["Jan 05 03:15"] == [0, 0, 0, 0, 1, 0]
    assert sum(map(sum, rows.values())) == 5
    assert '<svg viewBox="0 0 720 180" role="img"' in page.text
    assert "5 records in all, 0 trace, 0 debug, 2 info, 1 warn, 2 error, 0 fatal" in page.text

    errors = chart_rows((await dashboard.get(f"/logs?{window}&level=error")).text, "volume-chart")
    assert sum(map(sum, errors.values())) == 2
    checkout = chart_rows((await dashboard.get(f"/logs?{window}&q=checkout")).text, "volume-chart")
    assert sum(map(sum, checkout.values())) == 3

    # A later page of the list draws no chart; a refused filter neither.
    assert 'id="volume-chart"' not in (await dashboard.get(f"/logs?{window}&level=loud")).text


async def test_the_count_stops_at_its_cap_and_says_where(services: Services, tenant: Tenant) -> None:
    await seed(services, tenant, *((minutes, "info", "tick") for minutes in range(0, 300, 30)))
    buckets = TimeBuckets.covering(WINDOW, WINDOW + timedelta(hours=6))
    async with services.db.transaction(write=False) as conn:
        counts, oldest = await LogRepository(conn, tenant.org_id).volume_by_level(
            LogFilters(), buckets, cap=4
        )
    assert sum(counts.values()) == 4
    assert oldest == WINDOW + timedelta(minutes=180)
    assert counts == {(12, "info"): 1, (14, "info"): 1, (16, "info"): 1, (18, "info"): 1}


def test_buckets_are_round_and_aligned() -> None:
    start = datetime(2026, 1, 5, 9, 47, tzinfo=UTC)
    hourly = TimeBuckets.covering(start - timedelta(days=1), start, most=25)
    assert (hourly.step, hourly.start, hourly.count) == (
        timedelta(hours=1),
        datetime(2026, 1, 4, 9, tzinfo=UTC),
        25,
    )
    quarter = TimeBuckets.covering(start - timedelta(hours=2), start)
    assert quarter.step == timedelta(minutes=5) and quarter.start.minute % 5 == 0
    assert TimeBuckets.covering(start - timedelta(days=30), start).step == timedelta(days=1)
    assert quarter.end >= start


async def test_overview_charts_runs_and_tokens_of_this_hour(
    dashboard: Dashboard, client: object, services: Services, tenant: Tenant
) -> None:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    thread_id = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread_id, input="hello #notools")
    ended = await wait_for_status(client, tenant, run["id"], "completed")
    page = await dashboard.get("/")
    runs = chart_rows(page.text, "runs-chart")
    assert len(runs) == 25
    # queued, running, requires_action, completed, failed, cancelled
    assert list(runs.values())[-1] == [0, 0, 0, 1, 0, 0]
    tokens = chart_rows(page.text, "tokens-chart")
    used = ended["usage"]["inputTokens"] + ended["usage"]["outputTokens"]
    assert used > 0
    assert list(tokens.values())[-1] == [used]


async def test_billing_charts_the_balance_day_by_day(
    dashboard: Dashboard, services: Services, tenant: Tenant
) -> None:
    empty = chart_rows((await dashboard.get("/billing")).text, "credits-chart")
    assert len(empty) == 30 and set(map(tuple, empty.values())) == {(0,)}
    async with services.db.transaction() as conn:
        ledger = LedgerRepository(conn, tenant.org_id)
        await ledger.post("credit", 5000, "Welcome credits", now=services.clock.now())
        await ledger.post("debit", -120, "A run", now=services.clock.now())
    rows = chart_rows((await dashboard.get("/billing")).text, "credits-chart")
    assert list(rows.values())[-1] == [4880]
    assert next(iter(rows.values())) == [0]  # before the first entry: the balance it started from
