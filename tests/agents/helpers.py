"""Requests the agent tests repeat."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support import Tenant

SCHEMA = {
    "type": "object",
    "properties": {"severity": {"enum": ["low", "high"]}, "summary": {"type": "string"}},
    "required": ["severity", "summary"],
}


async def create_agent(client: httpx.AsyncClient, tenant: Tenant, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "support triage")
    response = await client.post("/v1/agents", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def update_agent(
    client: httpx.AsyncClient, tenant: Tenant, agent_id: str, **body: Any
) -> dict[str, Any]:
    response = await client.patch(f"/v1/agents/{agent_id}", headers=tenant.secret, json=body)
    assert response.status_code == 200, response.text
    updated: dict[str, Any] = response.json()
    return updated
