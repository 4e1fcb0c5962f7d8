"""The log volume and run charts count every record and run of their window, however many, from the hourly
counts: past the bounded scan they replaced (its cap set to 1 here), with a window's partial first and
last hours counted from the records, and the filters the counts answer (project, level) applied. A text
query still falls back to the bounded scan and says so."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa

from tests.dashboard.support import Dashboard
from tests.dashboard.test_charts import chart_rows
from tests.support import Tenant
from threadline.dashboard.pages import logs
from threadline.kit.hours import hour_of
from threadline.kit.ids import id_at
from threadline.runtime import Services
from threadline.telemetry.tables import log_counts, log_records

START = datetime(2026, 1, 3, tzinfo=UTC)


async def seed(services: Services, tenant: Tenant, *records: tuple[timedelta, str, str]) -> None:
    """Records received ``after`` START (in a project, at a level), with their hours' counts, as the
    appenders write both."""
    rows = []
    for n, (after, project_id, level) in enumerate(records):
        at = START + after
        rows.append(
            {
                "organization_id": tenant.org_id,
                "id": id_at("log", int(at.timestamp() * 1000), n),
                "received_at": at,
                "project_id": project_id,
                "kind": "log",
                "level": level,
                "message": "tick",
                "timestamp": at,
                "attributes": {},
            }
        )
    counted = Counter((r["project_id"], r["level"], hour_of(r["received_at"])) for r in rows)
    counts = [
        {
            "organization_id": tenant.org_id,
            "project_id": p,
            "level": lv,
            "kind": "log",
            "hour": h,
            "records": n,
        }
        for (p, lv, h), n in counted.items()
    ]
    async with services.db.transaction() as conn:
        await conn.execute(sa.insert(log_records), rows)
        await conn.execute(sa.insert(log_counts), counts)


def total(html: str) -> int:
    return sum(map(sum, chart_rows(html, "volume-chart").values()))


async def test_a_long_window_counts_everything_and_its_partial_hours(
    dashboard: Dashboard,
    client: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logs, "CHART_WINDOW", 2)
    created = await client.post("/v1/projects", json={"name": "web"}, headers=tenant.secret)
    assert created.status_code == 201, created.text
    web = created.json()["id"]
    minutes = timedelta(minutes=1)
    await seed(
        services,
        tenant,
        (10 * minutes, tenant.project_id, "info"),  # before the window's start (00:30), in its first hour
        (40 * minutes, tenant.project_id, "info"),  # the first, partial hour: counted from the records
        (29 * 60 * minutes, tenant.project_id, "error"),  # whole hours: from the counts
        (29 * 60 * minutes, tenant.project_id, "warn"),
        (29 * 60 * minutes, tenant.project_id, "info"),
        (30 * 60 * minutes, web, "error"),
        (54 * 60 * minutes + 30 * minutes, tenant.project_id, "info"),  # the last, partial hour
        (54 * 60 * minutes + 50 * minutes, tenant.project_id, "info"),  # after the window's end (06:45)
    )
    window = "since=2026-01-03T00:30&until=2026-01-05T06:45"
    page = (await dashboard.get(f"/logs?{window}")).text
    rows = chart_rows(page, "volume-chart")
    assert len(rows) == 19 and next(iter(rows)) == "Jan 03 00:00"  # three hours a bar
    # Columns: trace, debug, info, warn, error, fatal.
    assert rows["Jan 03 00:00"] == [0, 0, 1, 0, 0, 0]
    assert rows["Jan 04 03:00"] == [0, 0, 1, 1, 1, 0]
    assert rows["Jan 04 06:00"] == [0, 0, 0, 0, 1, 0]
    assert rows["Jan 05 06:00"] == [0, 0, 1, 0, 0, 0]
    assert total(page) == 6 and "Counted over the newest" not in page
    assert total((await dashboard.get(f"/logs?{window}&projectId={tenant.project_id}")).text) == 5
    assert total((await dashboard.get(f"/logs?{window}&level=warn")).text) == 3
    assert total((await dashboard.get(f"/logs?{window}&projectId={web}&level=error")).text) == 1

    # A text query is counted from the records, over the newest CHART_WINDOW of them, and says so.
    searched = (await dashboard.get(f"/logs?{window}&q=tick")).text
    assert total(searched) == 2 and "Counted over the newest 2 matching records" in searched


async def test_the_default_window_counts_past_the_old_cap(
    dashboard: Dashboard,
    intake: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logs, "CHART_WINDOW", 2)
    records = [{"message": f"r{i}", "level": "error" if i % 2 else "info"} for i in range(5)]
    assert (await intake.post("/v1/logs", json=records, headers=tenant.public)).status_code == 202
    theirs = [{"message": "theirs"}] * 3
    assert (await intake.post("/v1/logs", json=theirs, headers=other_tenant.public)).status_code == 202
    page = (await dashboard.get("/logs")).text
    rows = chart_rows(page, "volume-chart")
    assert len(rows) == 25 and list(rows.values())[-1] == [0, 0, 3, 0, 2, 0]
    assert "Counted over the newest" not in page
