"""Automations across processes (PostgreSQL + Redis): two ``threadline worker`` processes schedule (the
API servers do not, with Redis), and a log trigger created through one server fires on records ingested
by another."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.automations.helpers import on_log, runs_per_automation, schedule
from tests.conftest import Backend
from tests.support import Tenant, running_server, running_worker
from threadline.automations.tables import automations
from threadline.config import Settings
from threadline.kit.clock import Clock, utcnow
from threadline.runs.tables import runs
from threadline.runtime import Services

pytestmark = pytest.mark.distributed


async def _created(http: httpx.AsyncClient, url: str, tenant: Tenant, body: dict[str, object]) -> str:
    response = await http.post(f"{url}/v1/automations", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    automation_id: str = response.json()["id"]
    return automation_id


async def test_workers_fire_each_due_schedule_once(
    backend: Backend, settings: Settings, tenant: Tenant, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert services.scheduler is not None and services.executor is not None
    await services.scheduler.aclose()  # the test's own app stays out: only the workers schedule here
    # It may still execute the runs, so its leases are dated on the workers' clock, the system's (its
    # reaper would otherwise find theirs lapsed, and theirs its own, as hosts whose clocks disagree do).
    monkeypatch.setattr(services.executor, "clock", Clock())
    env = backend.env(settings)
    with running_server(env) as api, running_worker(env), running_worker(env):
        async with httpx.AsyncClient() as http:
            made = [await _created(http, api.api_url, tenant, schedule("0 0 1 1 *")) for _ in range(10)]
            async with services.db.transaction() as conn:  # due now rather than on New Year's Day
                await conn.execute(
                    automations.update().where(automations.c.id.in_(made)).values(next_run_at=utcnow())
                )
            due_at = time.monotonic()
            async with asyncio.timeout(5):
                while True:
                    counted = await runs_per_automation(services)
                    if all(counted[automation_id] for automation_id in made):
                        break
                    await asyncio.sleep(0.05)
            assert time.monotonic() - due_at < 5
            async with asyncio.timeout(30):  # the workers execute them too
                while True:
                    async with services.db.transaction(write=False) as conn:
                        statuses = (
                            await conn.execute(runs.select().where(runs.c.automation_id.in_(made)))
                        ).mappings()
                        if all(row["status"] == "completed" for row in statuses):
                            break
                    await asyncio.sleep(0.1)
    counted = await runs_per_automation(services)
    assert {automation_id: counted[automation_id] for automation_id in made} == dict.fromkeys(made, 1)


async def test_a_log_trigger_made_on_one_server_fires_on_another(
    backend: Backend, settings: Settings, tenant: Tenant, services: Services
) -> None:
    env = backend.env(settings)
    with running_server(env) as a, running_server(env) as b:
        async with httpx.AsyncClient() as http:
            automation_id = await _created(
                http, a.api_url, tenant, on_log(contains="checkout", cooldownSeconds=300)
            )
            # B hears of it by signal: records ingested by B before that do not match, so keep sending.
            async with asyncio.timeout(5):
                while not (await runs_per_automation(services))[automation_id]:
                    response = await http.post(
                        f"{b.intake_url}/v1/logs",
                        headers=tenant.public,
                        json={"message": "checkout failed", "level": "error"},
                    )
                    assert response.status_code == 202
                    await asyncio.sleep(0.1)
            for _ in range(5):  # within the cooldown: no second run
                response = await http.post(
                    f"{b.intake_url}/v1/logs",
                    headers=tenant.public,
                    json={"message": "checkout", "level": "error"},
                )
                assert response.status_code == 202
    assert (await runs_per_automation(services))[automation_id] == 1
