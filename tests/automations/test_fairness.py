"""One organization's schedules do not delay another's, and what an organization may pile up is capped
(issue 36): due schedules fire round robin across organizations, each marked with the moment it fired; an
organization holds at most its limit of automations (409 ``AUTOMATION_LIMIT``), and a firing starts no run
while its organization has its limit of runs queued (``QUEUED_RUN_LIMIT`` on the automation).

These tests' app executes no runs and runs no scheduler of its own (``runs="off"``): runs stay queued where
the firings left them, and the test's scheduler is the only one, on a clock that moves as it is read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI

from tests.automations.conftest import START
from tests.automations.helpers import create, get, leave_nothing_behind, schedule
from tests.support import Tenant
from threadline import provisioning as org_service
from threadline.app import create_app
from threadline.automations.scheduler import Scheduler
from threadline.config import Settings
from threadline.kit.clock import ManualClock
from threadline.runtime import Services, open_services

DUE = START + timedelta(seconds=30)  # 10:00:00, when every `* * * * *` made at START is first due
# What the clock moves each time it is read while the scheduler fires: about what a firing took when the
# issue measured it (53 ms), so firings in a row are seen to take time.
STEP = timedelta(milliseconds=50)


def parse_timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class SteppingClock(ManualClock):
    """Moves ``STEP`` on each read once ``stepping``: time passes while the scheduler works."""

    stepping = False

    def now(self) -> datetime:
        if self.stepping:
            self.advance(STEP.total_seconds())
        return super().now()


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock(START)


@pytest.fixture
async def app(settings: Settings, clock: SteppingClock) -> AsyncIterator[FastAPI]:
    async with open_services(settings, "off", clock=clock) as services:
        application = create_app(settings, services)
        async with application.router.lifespan_context(application):
            yield application
        await leave_nothing_behind(services)


@pytest.fixture
def scheduler(services: Services, settings: Settings, clock: SteppingClock) -> Scheduler:
    return Scheduler(services.db, services.signals, services.prices, clock, settings)


async def test_many_schedules_of_one_organization_do_not_delay_anothers(
    client: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
    scheduler: Scheduler,
    clock: SteppingClock,
) -> None:
    """Fifty of one organization's schedules and one of another's, made last, all due at 10:00:00: the
    other's fires in the first round, within a second, while the fifty take their time after it."""
    crowd = [(await create(client, other_tenant, schedule("* * * * *")))["id"] for _ in range(50)]
    alone = (await create(client, tenant, schedule("* * * * *")))["id"]
    clock.set(DUE)
    clock.stepping = True
    fired = await scheduler.tick()
    clock.stepping = False
    assert fired == 51

    alone_at = parse_timestamp((await get(client, tenant, alone))["lastTriggeredAt"])
    crowd_at = sorted(
        [parse_timestamp((await get(client, other_tenant, a))["lastTriggeredAt"]) for a in crowd]
    )
    assert alone_at - DUE < timedelta(seconds=1)
    # Each firing marks its own moment: the crowd's last fired seconds after the one alone, not at the
    # tick's time, and the one alone went before all but the crowd's first few.
    assert crowd_at[-1] - alone_at > timedelta(seconds=1)
    assert sum(at < alone_at for at in crowd_at) <= 4


async def test_an_organization_holds_at_most_its_automations(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, services: Services, settings: Settings
) -> None:
    assert settings.default_automation_limit == 100
    async with services.db.transaction() as conn:
        await org_service.set_automation_limit(
            conn, services.signals, tenant.org_id, 2, now=services.clock.now()
        )
    for _ in range(2):
        await create(client, tenant, schedule())
    refused = await client.post("/v1/automations", headers=tenant.secret, json=schedule())
    assert refused.status_code == 409, refused.text
    assert refused.json()["reason"] == "AUTOMATION_LIMIT"
    assert "threadline orgs set-limit --automations" in refused.json()["message"]
    # Another organization's own limit (the default) is untouched by this one's.
    await create(client, other_tenant, schedule())
    # Deleting one makes room again.
    listed = (await client.get("/v1/automations", headers=tenant.secret)).json()["data"]
    assert (
        await client.delete(f"/v1/automations/{listed[0]['id']}", headers=tenant.secret)
    ).status_code == 200
    await create(client, tenant, schedule())


async def test_firings_start_no_run_while_the_organization_has_its_limit_queued(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, scheduler: Scheduler, clock: SteppingClock
) -> None:
    async with services.db.transaction() as conn:
        await org_service.set_queued_run_limit(
            conn, services.signals, tenant.org_id, 2, now=services.clock.now()
        )
    made = [(await create(client, tenant, schedule("* * * * *")))["id"] for _ in range(3)]
    clock.set(DUE)
    assert await scheduler.tick() == 2  # nothing executes runs here: the first two stay queued
    after = [await get(client, tenant, automation_id) for automation_id in made]
    skipped = [a for a in after if a["lastError"] is not None]
    assert len(skipped) == 1
    assert skipped[0]["lastError"]["code"] == "QUEUED_RUN_LIMIT"
    assert skipped[0]["nextRunAt"] == "2026-11-21T10:01:00.000Z"  # moved on, not retried every tick
    manual = await client.post(f"/v1/automations/{made[0]}/trigger", headers=tenant.secret)
    assert manual.status_code == 409 and manual.json()["reason"] == "QUEUED_RUN_LIMIT"
