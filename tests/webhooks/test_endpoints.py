"""/v1/webhooks: registration under the egress rules, the secret shown once, pages, updates, deletes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.support import Tenant, assert_error
from tests.webhooks.helpers import register
from threadline.runtime import Services
from threadline.webhooks.tables import webhook_endpoints

FIELDS = {"id", "url", "events", "description", "createdAt", "updatedAt"}
URL = "http://127.0.0.1:9/hook"


class TestCreate:
    async def test_secret_shown_once_and_stored_sealed(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        created = await register(
            client, tenant, URL, events=["run.completed", "run.failed"], description="ci"
        )
        assert set(created) == FIELDS | {"secret"}
        assert created["id"].startswith("whk_")
        assert created["secret"].startswith("whsec_")
        assert created["events"] == ["run.completed", "run.failed"]
        assert created["description"] == "ci"
        response = await client.get(f"/v1/webhooks/{created['id']}", headers=tenant.secret)
        assert response.json() == {k: v for k, v in created.items() if k != "secret"}
        listed = await client.get("/v1/webhooks", headers=tenant.secret)
        assert created["secret"] not in listed.text
        async with services.db.transaction(write=False) as conn:
            sealed = (await conn.execute(sa.select(webhook_endpoints.c.secret_sealed))).scalars().all()
        assert sealed and all(created["secret"].removeprefix("whsec_") not in s for s in sealed)

    @pytest.mark.parametrize("url", ["http://10.0.0.1/hook", "http://169.254.169.254/", "http://[::1]:8080/"])
    async def test_non_public_address_refused(
        self, client: httpx.AsyncClient, tenant: Tenant, url: str
    ) -> None:
        response = await client.post(
            "/v1/webhooks", headers=tenant.secret, json={"url": url, "events": ["*"]}
        )
        assert_error(
            response, 400, "BAD_REQUEST", operation_id="webhooks.create", reason="EGRESS_NOT_ALLOWED",
            missing=["url"],
        )  # fmt: skip

    @pytest.mark.parametrize(
        "body",
        [
            {"events": ["*"]},
            {"url": URL},
            {"url": URL, "events": []},
            {"url": URL, "events": ["run.started"]},
            {"url": "ftp://127.0.0.1/", "events": ["*"]},
            {"url": URL, "events": ["*"], "description": "x" * 501},
            {"url": URL, "events": ["*"], "secret": "whsec_mine"},
        ],
    )
    async def test_bad_bodies(self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]) -> None:
        response = await client.post("/v1/webhooks", headers=tenant.secret, json=body)
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "BAD_REQUEST"

    async def test_needs_a_secret_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        body = {"url": URL, "events": ["*"]}
        assert_error(
            await client.post("/v1/webhooks", json=body),
            401, "UNAUTHORIZED", operation_id="webhooks.create", missing=["Authorization"],
        )  # fmt: skip
        assert_error(
            await client.post("/v1/webhooks", headers=tenant.public, json=body),
            403, "FORBIDDEN", operation_id="webhooks.create", reason="PUBLIC_KEY_NOT_ALLOWED",
        )  # fmt: skip


class TestReadUpdateDelete:
    async def test_other_organizations_see_nothing(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        created = await register(client, tenant, URL, events=["*"])
        path = f"/v1/webhooks/{created['id']}"
        for method, suffix, operation in [
            ("GET", "", "webhooks.get"),
            ("PATCH", "", "webhooks.update"),
            ("DELETE", "", "webhooks.delete"),
            ("GET", "/deliveries", "webhooks.listDeliveries"),
            ("POST", "/test", "webhooks.test"),
        ]:
            body = {"description": "x"} if method == "PATCH" else None
            response = await client.request(method, path + suffix, headers=other_tenant.secret, json=body)
            assert_error(response, 404, "NOT_FOUND", operation_id=operation)
        listed = await client.get("/v1/webhooks", headers=other_tenant.secret)
        assert listed.json() == {"data": [], "nextCursor": None}

    async def test_pages_newest_first(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        ids = [(await register(client, tenant, URL, events=["*"]))["id"] for _ in range(3)]
        first = (await client.get("/v1/webhooks?limit=2", headers=tenant.secret)).json()
        assert [w["id"] for w in first["data"]] == ids[::-1][:2]
        rest = await client.get(f"/v1/webhooks?limit=2&cursor={first['nextCursor']}", headers=tenant.secret)
        assert [w["id"] for w in rest.json()["data"]] == ids[:1]

    async def test_update_and_delete(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await register(client, tenant, URL, events=["run.failed"], description="old")
        path = f"/v1/webhooks/{created['id']}"
        response = await client.patch(
            path, headers=tenant.secret, json={"events": ["*"], "description": None}
        )
        assert response.status_code == 200, response.text
        assert (response.json()["events"], response.json()["description"]) == (["*"], None)
        refused = await client.patch(path, headers=tenant.secret, json={"url": "http://10.1.2.3/"})
        assert_error(refused, 400, "BAD_REQUEST", operation_id="webhooks.update", reason="EGRESS_NOT_ALLOWED",
                     missing=["url"])  # fmt: skip
        nulled = await client.patch(path, headers=tenant.secret, json={"events": None})
        assert_error(nulled, 400, "BAD_REQUEST", operation_id="webhooks.update", reason="VALIDATION_FAILED")
        deleted = await client.delete(path, headers=tenant.secret)
        assert deleted.status_code == 200 and deleted.json()["id"] == created["id"]
        assert_error(
            await client.get(path, headers=tenant.secret), 404, "NOT_FOUND", operation_id="webhooks.get"
        )
