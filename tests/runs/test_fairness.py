"""Sharing run slots between organizations: each organization's run concurrency, the claim that prefers
the organization with the fewest running runs, and the run time limit; in both shapes (the distributed
one claims in PostgreSQL, as ``threadline worker`` does; tests/runs/test_distributed.py runs two real
workers)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.runs.helpers import DONE, get_run, read_stream, start_run, types, wait_for_status
from tests.support import Tenant, make_tenant, make_thread
from threadline.app import create_app
from threadline.config import Settings
from threadline.kit.clock import utcnow
from threadline.provisioning import set_run_concurrency
from threadline.runs.claim import ClaimsAcrossOrganizations
from threadline.runs.repository import RunsAcrossOrganizations
from threadline.runs.service import cancel_run
from threadline.runs.tables import runs
from threadline.runtime import Services

# Runs that hold their slot for the whole test: the first delta comes after a minute.
STUCK = "#notools #delay=60000 #chunks=100000"
QUICK = "#notools #chunks=3"


@asynccontextmanager
async def api(settings: Settings, **overrides: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Services]]:
    app = create_app(settings.model_copy(update=overrides), chores=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client, app.state.runtime.services


async def start_on_new_threads(
    client: httpx.AsyncClient, tenant: Tenant, count: int, prompt: str
) -> list[str]:
    """``count`` runs, each on a thread of its own (runs of one thread wait for each other anyway)."""
    runs = []
    for _ in range(count):
        thread = await make_thread(client, tenant)
        runs.append((await start_run(client, tenant, thread, input=prompt))["id"])
    return runs


async def cancel_all(client: httpx.AsyncClient, tenant: Tenant, run_ids: Sequence[str]) -> None:
    """Ends what a test left waiting: the database is shared by the session's tests, and a queued run left
    behind would take a slot in the next test's executor."""
    for run_id in run_ids:
        response = await client.post(f"/v1/runs/{run_id}/cancel", headers=tenant.secret)
        assert response.status_code in (200, 409), response.text


async def cancel_every_queued_run(services: Services) -> None:
    """For a test that counts slots: no queued run of an earlier test may compete for them."""
    async with services.db.transaction() as conn:
        queued = (await conn.execute(sa.select(runs.c.id).where(runs.c.status == "queued"))).scalars().all()
        for run_id in queued:
            run = await RunsAcrossOrganizations(conn).get(run_id)
            assert run is not None
            await cancel_run(
                conn, services.signals, services.prices, run.organization_id, run_id, now=services.clock.now()
            )


async def statuses(client: httpx.AsyncClient, tenant: Tenant, run_ids: Sequence[str]) -> list[str]:
    return [(await get_run(client, tenant, run_id))["status"] for run_id in run_ids]


async def until_running(
    client: httpx.AsyncClient, tenant: Tenant, run_ids: Sequence[str], count: int
) -> None:
    async with asyncio.timeout(15):
        while True:  # the run API is what a client sees; nothing announces a claim to poll-free waiters
            if (await statuses(client, tenant, run_ids)).count("running") >= count:
                return
            await asyncio.sleep(0.02)


async def test_an_organization_runs_at_most_its_concurrency_and_another_is_not_starved(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    stuck = await start_on_new_threads(client, tenant, 6, STUCK)
    try:
        await until_running(client, tenant, stuck, 4)
        started = time.monotonic()
        [quick] = await start_on_new_threads(client, other_tenant, 1, QUICK)
        ended = await wait_for_status(client, other_tenant, quick, "completed", "failed")
        assert ended["status"] == "completed" and time.monotonic() - started < 5
        # The executor has looked for claimable runs many times meanwhile: the other two still wait.
        assert sorted(await statuses(client, tenant, stuck)) == ["queued"] * 2 + ["running"] * 4
    finally:
        await cancel_all(client, tenant, stuck)


async def test_a_freed_slot_goes_to_the_organization_with_the_fewest_running(settings: Settings) -> None:
    async with api(settings, max_concurrent_runs=2) as (client, services):
        await cancel_every_queued_run(services)
        busy, idle = await make_tenant(services, "busy"), await make_tenant(services, "idle")
        first, second, third = await start_on_new_threads(client, busy, 3, STUCK)
        await until_running(client, busy, [first, second], 2)
        [waiting] = await start_on_new_threads(client, idle, 1, STUCK)
        try:
            assert await statuses(client, busy, [third]) == ["queued"]
            # A slot frees: the idle organization's run takes it though the busy one's third is older.
            await cancel_all(client, busy, [first])
            await wait_for_status(client, idle, waiting, "running")
            assert await statuses(client, busy, [second, third]) == ["running", "queued"]
        finally:
            await cancel_all(client, busy, [second, third])
            await cancel_all(client, idle, [waiting])


async def test_an_operator_limit_applies_at_the_next_claim(
    client: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    async with services.db.transaction() as conn:
        await set_run_concurrency(conn, services.signals, tenant.org_id, 1, now=services.clock.now())
    stuck = await start_on_new_threads(client, tenant, 3, STUCK)
    try:
        await until_running(client, tenant, stuck, 1)
        assert sorted(await statuses(client, tenant, stuck)) == ["queued", "queued", "running"]
        async with services.db.transaction() as conn:
            await set_run_concurrency(conn, services.signals, tenant.org_id, 2, now=services.clock.now())
        await until_running(client, tenant, stuck, 2)  # executors look every second even without a signal
        assert sorted(await statuses(client, tenant, stuck)) == ["queued", "running", "running"]
    finally:
        await cancel_all(client, tenant, stuck)


@pytest.mark.distributed
async def test_concurrent_claims_never_exceed_an_organizations_concurrency(settings: Settings) -> None:
    """Two claiming transactions at once on PostgreSQL (SQLite runs write transactions one at a time): the
    second cannot see the first's uncommitted claim, and only the organization's row lock keeps it from
    starting a second run of an organization allowed one."""
    async with api(settings, run_execution="worker") as (client, services):  # nothing claims but the test
        busy, idle = await make_tenant(services, "busy"), await make_tenant(services, "idle")
        async with services.db.transaction() as conn:
            await set_run_concurrency(conn, services.signals, busy.org_id, 1, now=services.clock.now())
        first, second = await start_on_new_threads(client, busy, 2, QUICK)
        [other] = await start_on_new_threads(client, idle, 1, QUICK)
        until = utcnow() + timedelta(seconds=30)
        try:
            async with services.db.transaction() as one:
                claimed = await ClaimsAcrossOrganizations(one).claim_next("one", utcnow(), until, 4)
                assert claimed is not None and claimed.id == first
                async with services.db.transaction() as two:
                    meanwhile = await ClaimsAcrossOrganizations(two).claim_next("two", utcnow(), until, 4)
                    assert meanwhile is not None and meanwhile.id == other
                    assert await ClaimsAcrossOrganizations(two).claim_next("two", utcnow(), until, 4) is None
            async with services.db.transaction() as three:  # after both committed: still one at most
                assert await ClaimsAcrossOrganizations(three).claim_next("three", utcnow(), until, 4) is None
            assert await statuses(client, busy, [first, second]) == ["running", "queued"]
        finally:
            await cancel_all(client, busy, [first, second])
            await cancel_all(client, idle, [other])


async def test_a_run_executing_too_long_fails_with_run_timeout(settings: Settings) -> None:
    async with api(settings, run_max_seconds=0.5) as (client, services):
        tenant = await make_tenant(services, "slow")
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#notools #chunks=1000 #delay=20")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events)[-3:] == ["error", "run_completed", DONE]
        assert events[-3]["code"] == "RUN_TIMEOUT" and "0.5 s" in events[-3]["message"]
        assert events[-2]["status"] == "failed"
        assert 0 < sum(t == "text_chunk" for t in types(events)) < 1000
        failed = await get_run(client, tenant, run["id"])
        assert failed["status"] == "failed" and failed["error"]["code"] == "RUN_TIMEOUT"

        # A run within the limit is not affected; the slot of the one that timed out is free again.
        quick = await start_run(client, tenant, thread, input=QUICK)
        assert (await wait_for_status(client, tenant, quick["id"], "completed", "failed"))["error"] is None
