"""Automation bodies and calls shared by the automation tests."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import httpx
import sqlalchemy as sa

from tests.support import Tenant
from threadline.automations.tables import automations
from threadline.kit.errors import ApiError
from threadline.runs.repository import ACTIVE
from threadline.runs.service import cancel_run
from threadline.runs.tables import runs
from threadline.runtime import Services


def schedule(cron: str = "0 * * * *", timezone: str | None = None, **action: Any) -> dict[str, Any]:
    trigger: dict[str, Any] = {"type": "schedule", "cron": cron}
    if timezone is not None:
        trigger["timezone"] = timezone
    return {"name": "hourly digest", "trigger": trigger, "action": {"prompt": "Summarise.", **action}}


def on_log(**trigger: Any) -> dict[str, Any]:
    return {
        "name": "error watch",
        "trigger": {"type": "log", **trigger},
        "action": {"prompt": "Investigate this error."},
    }


async def create(client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/v1/automations", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def get(client: httpx.AsyncClient, tenant: Tenant, automation_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def runs_of(client: httpx.AsyncClient, tenant: Tenant, thread_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/threads/{thread_id}/runs", headers=tenant.secret, params={"limit": 100})
    assert response.status_code == 200, response.text
    runs: list[dict[str, Any]] = response.json()["data"]
    return runs


async def threads_of(client: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    response = await client.get("/v1/threads", headers=tenant.secret, params={"limit": 100})
    assert response.status_code == 200, response.text
    threads: list[dict[str, Any]] = response.json()["data"]
    return threads


async def automation_runs(
    client: httpx.AsyncClient, tenant: Tenant, automation_id: str
) -> list[dict[str, Any]]:
    """Every run the automation started, on whichever threads (oldest first)."""
    found = []
    for thread in await threads_of(client, tenant):
        found += [
            r for r in await runs_of(client, tenant, thread["id"]) if r["automationId"] == automation_id
        ]
    return sorted(found, key=lambda run: run["id"])


async def runs_per_automation(services: Services) -> Counter[str]:
    """How many runs each automation started, read from the database (a count over the API would cost
    a request per thread)."""
    async with services.db.transaction(write=False) as conn:
        query = sa.select(runs.c.automation_id).where(runs.c.automation_id.is_not(None))
        return Counter((await conn.execute(query)).scalars())


async def leave_nothing_behind(services: Services) -> None:
    """Deletes every automation and cancels the runs that have not ended: the database is shared by the
    session, and schedules left behind or queued runs would be fired and executed by later tests' servers."""
    async with services.db.transaction() as conn:
        await conn.execute(automations.delete())
        active = sa.select(runs.c.id, runs.c.organization_id).where(runs.c.status.in_(ACTIVE))
        left = (await conn.execute(active)).all()
    for run_id, organization_id in left:
        with contextlib.suppress(ApiError):
            async with services.db.transaction() as conn:
                await cancel_run(
                    conn, services.signals, services.prices, organization_id, run_id, now=services.clock.now()
                )
