"""Requests the MCP server tests repeat."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support import Tenant


async def register(client: httpx.AsyncClient, tenant: Tenant, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "tools")
    response = await client.post("/v1/mcp-servers", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def tools_of(client: httpx.AsyncClient, tenant: Tenant, server_id: str) -> httpx.Response:
    return await client.get(f"/v1/mcp-servers/{server_id}/tools", headers=tenant.secret)
