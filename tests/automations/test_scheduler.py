"""Schedules on a controllable clock: a cron firing, missed ticks, the loop's latency, failures, and
exactly-once firing with schedulers racing (separate connection pools, as separate processes have)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.automations.helpers import automation_runs, create, get, runs_per_automation, schedule
from tests.support import Tenant, make_thread
from threadline.automations.scheduler import Scheduler
from threadline.config import Settings
from threadline.kit.clock import ManualClock
from threadline.kit.db import Database
from threadline.runtime import Services


async def test_a_cron_fires_at_its_time_and_only_then(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, clock: ManualClock
) -> None:
    assert services.scheduler is not None
    created = await create(client, tenant, schedule("0 * * * *"))
    clock.advance(29.999)  # 09:59:59.999
    await services.scheduler.tick()
    assert await automation_runs(client, tenant, created["id"]) == []
    clock.advance(0.001)  # 10:00:00
    await services.scheduler.tick()
    await services.scheduler.tick()
    runs = await automation_runs(client, tenant, created["id"])
    assert len(runs) == 1
    assert runs[0]["metadata"] == {"trigger": "schedule"}
    after = await get(client, tenant, created["id"])
    assert after["lastTriggeredAt"] == "2026-11-21T10:00:00.000Z"
    assert after["nextRunAt"] == "2026-11-21T11:00:00.000Z"
    assert after["lastError"] is None
    clock.advance(3600)
    await services.scheduler.tick()
    assert len(await automation_runs(client, tenant, created["id"])) == 2


async def test_ticks_missed_while_down_fire_once(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, clock: ManualClock
) -> None:
    assert services.scheduler is not None
    created = await create(client, tenant, schedule("*/5 * * * *"))  # due 10:00, 10:05, ...
    clock.advance(10 * 3600 + 17)  # 19:59:47: 120 ticks missed
    await services.scheduler.tick()
    await services.scheduler.tick()
    assert len(await automation_runs(client, tenant, created["id"])) == 1
    after = await get(client, tenant, created["id"])
    assert after["lastTriggeredAt"] == "2026-11-21T19:59:47.000Z"
    assert after["nextRunAt"] == "2026-11-21T20:00:00.000Z"


async def test_the_loop_fires_within_five_seconds(
    client: httpx.AsyncClient, tenant: Tenant, clock: ManualClock
) -> None:
    """No explicit tick: the server's own loop (interval 1 s) notices the schedule is due."""
    created = await create(client, tenant, schedule("0 * * * *"))
    clock.advance(30)
    started = time.monotonic()
    async with asyncio.timeout(5):
        while True:
            if await automation_runs(client, tenant, created["id"]):
                break
            await asyncio.sleep(0.05)
    assert time.monotonic() - started < 5


async def test_a_firing_that_cannot_start_its_run_is_recorded_once(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, clock: ManualClock
) -> None:
    assert services.scheduler is not None
    thread = await make_thread(client, tenant)
    created = await create(client, tenant, schedule("0 * * * *", threadId=thread))
    await client.delete(f"/v1/threads/{thread}", headers=tenant.secret)
    clock.advance(30)
    await services.scheduler.tick()
    after = await get(client, tenant, created["id"])
    assert after["lastError"]["code"] == "THREAD_NOT_FOUND"
    assert after["lastTriggeredAt"] == "2026-11-21T10:00:00.000Z"
    assert after["nextRunAt"] == "2026-11-21T11:00:00.000Z"  # not retried every tick
    # Pointed at a new thread, the next firing succeeds and clears the error.
    response = await client.patch(
        f"/v1/automations/{created['id']}",
        headers=tenant.secret,
        json={"action": {"prompt": "Summarise.", "threadId": None}},
    )
    assert response.status_code == 200
    clock.advance(3600)
    await services.scheduler.tick()
    after = await get(client, tenant, created["id"])
    assert after["lastError"] is None
    assert len(await automation_runs(client, tenant, created["id"])) == 1


async def test_disabled_schedules_do_not_fire_and_resume_from_now(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, clock: ManualClock
) -> None:
    assert services.scheduler is not None
    created = await create(client, tenant, {**schedule("0 * * * *"), "enabled": False})
    clock.advance(3 * 3600)
    await services.scheduler.tick()
    assert await automation_runs(client, tenant, created["id"]) == []
    response = await client.patch(
        f"/v1/automations/{created['id']}", headers=tenant.secret, json={"enabled": True}
    )
    assert response.json()["nextRunAt"] == "2026-11-21T13:00:00.000Z"
    await services.scheduler.tick()
    assert await automation_runs(client, tenant, created["id"]) == []


@pytest.mark.parametrize("racers", [3])
async def test_racing_schedulers_fire_each_tick_exactly_once(
    client: httpx.AsyncClient,
    tenant: Tenant,
    services: Services,
    settings: Settings,
    clock: ManualClock,
    racers: int,
) -> None:
    """The app's own scheduler and ``racers`` more, each on its own connection pool, tick together over
    the same due schedules, again and again: every schedule fires once per tick time."""
    made = [(await create(client, tenant, schedule("*/10 * * * *")))["id"] for _ in range(20)]
    databases = [Database(settings.resolved_database_url) for _ in range(racers)]
    schedulers = [Scheduler(db, services.signals, services.prices, clock, settings) for db in databases]
    try:
        for _ in range(3):  # ticks due at 10:00, 10:10, 10:20
            clock.advance(600)
            fired = await asyncio.gather(*(s.tick() for s in schedulers), services.scheduler.tick())  # type: ignore[union-attr]
            assert sum(fired) <= len(made)
    finally:
        for db in databases:
            await db.dispose()
    counted = await runs_per_automation(services)
    assert {automation_id: counted[automation_id] for automation_id in made} == dict.fromkeys(made, 3)
    for automation_id in made:
        after = await get(client, tenant, automation_id)
        assert after["lastTriggeredAt"] == "2026-11-21T10:29:30.000Z"
        assert after["nextRunAt"] == "2026-11-21T10:30:00.000Z"
