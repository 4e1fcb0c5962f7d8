"""Shared steps of the webhook tests."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.support import Tenant


async def register(client: httpx.AsyncClient, tenant: Tenant, url: str, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/webhooks", headers=tenant.secret, json={"url": url, **body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def deliveries(client: httpx.AsyncClient, tenant: Tenant, webhook_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/webhooks/{webhook_id}/deliveries", headers=tenant.secret)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["data"]
    return found


async def settled(
    client: httpx.AsyncClient, tenant: Tenant, webhook_id: str, finished: int
) -> list[dict[str, Any]]:
    """The endpoint's deliveries once ``finished`` attempts have a result (succeeded or failed)."""
    async with asyncio.timeout(15):
        while True:
            found = await deliveries(client, tenant, webhook_id)
            if len([d for d in found if d["status"] != "pending"]) >= finished:
                return found
            await asyncio.sleep(0.02)
