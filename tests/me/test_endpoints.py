from __future__ import annotations

import httpx

from tests.support import Tenant, assert_error


class TestGet:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        assert_error(
            await client.get("/v1/me"), 401, "UNAUTHORIZED", operation_id="me.get", missing=["Authorization"]
        )

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/me", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="me.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_names_organization_and_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/me", headers=tenant.secret)
        assert response.status_code == 200
        body = response.json()
        assert body["organization"] == {
            "id": tenant.org_id,
            "name": "acme",
            "rateLimit": {"requestsPerMinute": 1000},
            "createdAt": body["organization"]["createdAt"],
        }
        key = body["key"]
        assert key["id"] == tenant.created.secret_key.id
        assert key["type"] == "secret" and key["prefix"] == "sk_"
        assert key["last4"] == tenant.created.secret_value[-4:]
        assert "key" not in key
