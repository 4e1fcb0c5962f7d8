"""Key management, one class per operation: no key, wrong key type, other organization, bad input, success."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import httpx
import sqlalchemy as sa

from tests.support import Tenant, assert_error, make_tenant
from threadline.config import Settings
from threadline.keys.tables import api_keys
from threadline.kit.clock import ManualClock, isoformat
from threadline.runtime import Services, open_services

KEY_FIELDS = {
    "id",
    "name",
    "type",
    "prefix",
    "last4",
    "projectId",
    "rateLimitPerMinute",
    "createdAt",
    "lastUsedAt",
    "revokedAt",
}


class TestCreate:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.post("/v1/keys", json={"name": "a", "type": "secret"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="keys.create", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/keys", headers=tenant.public, json={"name": "a", "type": "secret"})
        assert_error(response, 403, "FORBIDDEN", operation_id="keys.create", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_secret_key_value_is_shown_once_and_only_hashed(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        response = await client.post(
            "/v1/keys", headers=tenant.secret, json={"name": "deploy bot", "type": "secret"}
        )
        assert response.status_code == 201
        created = response.json()
        assert set(created) == KEY_FIELDS | {"key"}
        value = created["key"]
        assert value.startswith("sk_") and len(value) >= 35 and value[3:].isalnum()
        assert created["prefix"] == "sk_" and created["last4"] == value[-4:]
        assert created["type"] == "secret" and created["projectId"] is None and created["revokedAt"] is None
        assert created["id"].startswith("key_") and created["createdAt"].endswith("Z")

        async with services.db.transaction(write=False) as conn:
            row = (
                (await conn.execute(sa.select(api_keys).where(api_keys.c.id == created["id"])))
                .mappings()
                .one()
            )
        assert row["key_hash"] == hashlib.sha256(value.encode()).hexdigest()
        assert value not in {str(v) for v in row.values()}

        listed = (await client.get("/v1/keys", headers=tenant.secret)).json()["data"]
        fetched = (await client.get(f"/v1/keys/{created['id']}", headers=tenant.secret)).json()
        for record in [*listed, fetched]:
            assert "key" not in record
        assert fetched["last4"] == value[-4:] and fetched["prefix"] == "sk_"
        me = await client.get("/v1/me", headers={"Authorization": f"Bearer {value}"})
        assert me.json()["key"]["id"] == created["id"]

    async def test_public_key_belongs_to_a_project(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        body = {"name": "web", "type": "public", "projectId": tenant.project_id}
        response = await client.post("/v1/keys", headers=tenant.secret, json=body)
        assert response.status_code == 201
        assert response.json()["key"].startswith("pk_")
        assert response.json()["prefix"] == "pk_" and response.json()["projectId"] == tenant.project_id

    async def test_public_key_without_project_is_400(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post(
            "/v1/keys", headers=tenant.secret, json={"name": "web", "type": "public"}
        )
        assert_error(response, 400, "BAD_REQUEST", operation_id="keys.create", missing=["projectId"])

    async def test_secret_key_with_project_is_400(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        body = {"name": "x", "type": "secret", "projectId": tenant.project_id}
        response = await client.post("/v1/keys", headers=tenant.secret, json=body)
        assert_error(response, 400, "BAD_REQUEST", operation_id="keys.create")

    async def test_another_organizations_project_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        body = {"name": "web", "type": "public", "projectId": other_tenant.project_id}
        response = await client.post("/v1/keys", headers=tenant.secret, json=body)
        assert_error(response, 404, "NOT_FOUND", operation_id="keys.create")

    async def test_bad_input(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for body in (
            {"name": "", "type": "secret"},
            {"name": "x" * 201, "type": "secret"},
            {"name": "x", "type": "admin"},
            {"name": "x", "type": "secret", "rateLimitPerMinute": 0},
            {"name": "x", "type": "secret", "project_id": None},
        ):
            response = await client.post("/v1/keys", headers=tenant.secret, json=body)
            assert_error(response, 400, "BAD_REQUEST", operation_id="keys.create", reason="VALIDATION_FAILED")


class TestList:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        assert_error(
            await client.get("/v1/keys"),
            401,
            "UNAUTHORIZED",
            operation_id="keys.list",
            missing=["Authorization"],
        )

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/keys", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="keys.list", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_lists_only_own_keys_newest_first(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        response = await client.get("/v1/keys", headers=tenant.secret)
        assert response.status_code == 200
        page = response.json()
        ids = [k["id"] for k in page["data"]]
        assert ids == [tenant.created.public_key.id, tenant.created.secret_key.id]
        assert page["nextCursor"] is None
        assert {k["prefix"] for k in page["data"]} == {"pk_", "sk_"}
        assert all(set(k) == KEY_FIELDS for k in page["data"])

    async def test_filters_by_type(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/keys?type=public", headers=tenant.secret)
        assert [k["type"] for k in response.json()["data"]] == ["public"]

    async def test_bad_input(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for query, reason in (
            ("type=admin", "VALIDATION_FAILED"),
            ("limit=0", "VALIDATION_FAILED"),
            ("limit=101", "VALIDATION_FAILED"),
            ("cursor=%%%", "INVALID_CURSOR"),
        ):
            response = await client.get(f"/v1/keys?{query}", headers=tenant.secret)
            assert_error(response, 400, "BAD_REQUEST", operation_id="keys.list", reason=reason)


class TestGet:
    async def test_requires_a_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(f"/v1/keys/{tenant.created.secret_key.id}")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="keys.get", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(f"/v1/keys/{tenant.created.secret_key.id}", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="keys.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_another_organizations_key_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        response = await client.get(f"/v1/keys/{other_tenant.created.secret_key.id}", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="keys.get")

    async def test_missing_key_is_404(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/keys/key_doesnotexist", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="keys.get")

    async def test_success(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        key = tenant.created.public_key
        response = await client.get(f"/v1/keys/{key.id}", headers=tenant.secret)
        assert response.status_code == 200
        body = response.json()
        assert body["id"] == key.id and body["type"] == "public" and body["projectId"] == tenant.project_id
        assert body["last4"] == tenant.created.public_value[-4:]


class TestRevoke:
    async def test_requires_a_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.delete(f"/v1/keys/{tenant.created.public_key.id}")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="keys.revoke", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.delete(f"/v1/keys/{tenant.created.public_key.id}", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="keys.revoke", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_another_organizations_key_is_404_and_stays_valid(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        response = await client.delete(
            f"/v1/keys/{other_tenant.created.secret_key.id}", headers=tenant.secret
        )
        assert_error(response, 404, "NOT_FOUND", operation_id="keys.revoke")
        assert (await client.get("/v1/me", headers=other_tenant.secret)).status_code == 200

    async def test_revokes_once_and_is_idempotent(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        key_id = tenant.created.public_key.id
        first = await client.delete(f"/v1/keys/{key_id}", headers=tenant.secret)
        assert first.status_code == 200
        assert first.json()["id"] == key_id and first.json()["revokedAt"].endswith("Z")
        again = await client.delete(f"/v1/keys/{key_id}", headers=tenant.secret)
        assert again.status_code == 200 and again.json()["revokedAt"] == first.json()["revokedAt"]
        listed = {k["id"]: k for k in (await client.get("/v1/keys", headers=tenant.secret)).json()["data"]}
        assert listed[key_id]["revokedAt"] == first.json()["revokedAt"]


class TestUsage:
    async def test_last_used_at_is_recorded(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        key_id = tenant.created.secret_key.id
        assert (await client.get(f"/v1/keys/{key_id}", headers=tenant.secret)).json()["lastUsedAt"] is None
        await services.authenticator.flush_usage()
        used = (await client.get(f"/v1/keys/{key_id}", headers=tenant.secret)).json()["lastUsedAt"]
        assert used is not None and used.endswith("Z")

    async def test_keys_are_dated_by_the_services_clock(self, settings: Settings) -> None:
        """Keys are dated by the services' clock, the one tests move: made at its moment, and a use at
        09:00 recorded as 09:00 however late it is flushed."""
        clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
        async with open_services(settings, runs="off", clock=clock) as services:
            tenant = await make_tenant(services, "dated")
            assert tenant.created.secret_key.created_at == clock.now()
            assert await services.authenticator.authenticate(tenant.created.secret_value.encode()) is not None
            used_at = clock.now()
            clock.advance(3600)
            await services.authenticator.flush_usage()
            async with services.db.transaction(write=False) as conn:
                rows = await conn.execute(
                    sa.select(api_keys.c.last_used_at).where(api_keys.c.id == tenant.created.secret_key.id)
                )
                recorded = rows.scalar_one()
            assert isoformat(recorded) == isoformat(used_at)
