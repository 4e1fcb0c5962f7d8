"""``/``: the counts of the organization (threads, the last 24 h of runs and log records, the balance) and
its recent runs and error logs, never another organization's."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from tests.dashboard.logs_support import open_intake
from tests.dashboard.support import Dashboard
from tests.support import Tenant, make_thread
from threadline.billing.ledger import LedgerRepository
from threadline.config import Settings
from threadline.dashboard.pages import overview
from threadline.kit.ids import id_at, id_time_ms, new_id
from threadline.runs.repository import Run, RunRepository, Status
from threadline.runtime import Services

DAY_MS = 86_400_000


@pytest.fixture
async def intake(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with open_intake(settings, services) as http:
        yield http


async def add_runs(
    services: Services, tenant: Tenant, thread_id: str, runs: list[tuple[str, Status]]
) -> None:
    """Runs with the given ids and statuses, written as they stand (no executor picks up an ended run),
    created when their ids say (as every run is)."""
    async with services.db.transaction(write=True) as conn:
        for run_id, status in runs:
            run = Run(
                id=run_id, organization_id=tenant.org_id, thread_id=thread_id, status=status, model="offline",
                instructions=None, automation_id=None, metadata={}, error_code=None, error_message=None,
                input_tokens=0, output_tokens=0, event_count=0,
                created_at=datetime.fromtimestamp(id_time_ms("run", run_id) / 1000, UTC),
            )  # fmt: skip
            await RunRepository(conn, tenant.org_id).insert(run)


def tally(page: str, name: str) -> int:
    found = re.search(rf'<span class="badge {name}">{name}</span> ([\d,]+)', page)
    assert found is not None, name
    return int(found.group(1).replace(",", ""))


def figure(page: str, label: str) -> str:
    found = re.search(rf'<div class="label">{label}</div>\s*<div class="figure">([^<]+)</div>', page)
    assert found is not None, label
    return found.group(1).strip()


async def test_counts_and_recent_items_of_this_organization_only(
    dashboard: Dashboard,
    client: httpx.AsyncClient,
    intake: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    other_tenant: Tenant,
) -> None:
    first = await make_thread(client, tenant)
    await make_thread(client, tenant)
    foreign_thread = await make_thread(client, other_tenant)
    old = id_at("run", int(time.time() * 1000) - 2 * DAY_MS, 7)
    recent = [new_id("run") for _ in range(3)]
    await add_runs(services, tenant, first, [(old, "completed"), (recent[0], "completed")])
    await add_runs(services, tenant, first, [(recent[1], "completed"), (recent[2], "failed")])
    await add_runs(services, other_tenant, foreign_thread, [(new_id("run"), "failed")])
    logs = [{"message": "up"}, {"message": "fine"}, {"message": "db <script> down", "level": "error"}]
    assert (await intake.post("/v1/logs", json=logs, headers=tenant.public)).status_code == 202
    foreign_log = {"message": "globex down", "level": "fatal"}
    assert (await intake.post("/v1/logs", json=foreign_log, headers=other_tenant.public)).status_code == 202
    async with services.db.transaction(write=True) as conn:
        await LedgerRepository(conn, tenant.org_id).post("credit", 1500, "grant", now=services.clock.now())
        await LedgerRepository(conn, other_tenant.org_id).post(
            "credit", 99, "grant", now=services.clock.now()
        )

    page = await dashboard.get("/")
    assert page.status_code == 200
    text = page.text
    assert figure(text, "Threads") == "2"
    assert figure(text, "Runs, last 24 h") == "3"  # the run of two days ago is not counted
    assert (tally(text, "completed"), tally(text, "failed"), tally(text, "running")) == (2, 1, 0)
    assert figure(text, "Log records, last 24 h") == "3"
    assert (tally(text, "info"), tally(text, "error"), tally(text, "fatal")) == (2, 1, 0)
    assert figure(text, "Balance") == "1,500"
    for run_id in [*recent, old]:
        assert f'href="/runs/{run_id}"' in text
    assert text.index(recent[2]) < text.index(recent[0])  # newest first
    listed = await client.get("/v1/logs", params={"level": "error"}, headers=tenant.secret)
    error_id = listed.json()["data"][0]["id"]
    assert f'href="/logs/{error_id}"' in text and "db &lt;script&gt; down" in text
    assert "<script>" not in text and "globex" not in text and foreign_thread not in text


async def test_counts_beyond_the_cap_say_so(
    dashboard: Dashboard,
    client: httpx.AsyncClient,
    intake: httpx.AsyncClient,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(overview, "COUNT_CAP", 2)
    for _ in range(3):
        await make_thread(client, tenant)
    logs = [{"message": "a"}, {"message": "b", "level": "warn"}, {"message": "c", "level": "warn"}]
    assert (await intake.post("/v1/logs", json=logs, headers=tenant.public)).status_code == 202
    text = (await dashboard.get("/")).text
    assert figure(text, "Threads") == "2+"
    # Log records (and runs) are read from the hourly counts: exact, whatever the cap.
    assert figure(text, "Log records, last 24 h") == "3"
    assert tally(text, "warn") == 2 and tally(text, "info") == 1
    assert "Counts marked + stop at 2: there are more" in text


async def test_an_empty_organization_reads_well(dashboard: Dashboard) -> None:
    text = (await dashboard.get("/")).text
    assert figure(text, "Threads") == "0" and figure(text, "Balance") == "0"
    assert "No runs yet." in text and "No errors in the last 24 hours." in text
