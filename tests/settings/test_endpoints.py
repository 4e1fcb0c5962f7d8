"""Settings: defaults, validation, the read-only rate limit, and that changes reach cached principals."""

from __future__ import annotations

import httpx
import pytest

from tests.support import Tenant, assert_error
from threadline.provisioning import set_run_concurrency
from threadline.runtime import Services

DEFAULTS = {
    "defaultModel": "offline/scripted",
    "instructions": None,
    "logRetentionDays": 30,
    "allowedOrigins": ["*"],
    "billingEnforced": False,
    "rateLimit": {"requestsPerMinute": 1000},
    "runConcurrency": 4,
}


class TestGet:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/settings")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="settings.get", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/settings", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="settings.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_defaults(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/settings", headers=tenant.secret)
        assert response.status_code == 200 and response.json() == DEFAULTS


class TestUpdate:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.patch("/v1/settings", json={})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="settings.update", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.patch("/v1/settings", headers=tenant.public, json={})
        assert_error(
            response, 403, "FORBIDDEN", operation_id="settings.update", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    @pytest.mark.parametrize(
        "body",
        [
            {"defaultModel": "gpt-4"},
            {"defaultModel": "acme/model"},
            {"defaultModel": "offline/unknown"},
            {"defaultModel": None},
            {"logRetentionDays": 0},
            {"logRetentionDays": 3651},
            {"logRetentionDays": "30"},
            {"allowedOrigins": []},
            {"allowedOrigins": ["https://app.example.com/path"]},
            {"allowedOrigins": ["ftp://x"]},
            {"allowedOrigins": None},
            {"billingEnforced": "yes"},
            {"instructions": "x" * 32769},
            {"theme": "dark"},
        ],
    )
    async def test_bad_input(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, object]
    ) -> None:
        response = await client.patch("/v1/settings", headers=tenant.secret, json=body)
        assert_error(response, 400, "BAD_REQUEST", operation_id="settings.update", reason="VALIDATION_FAILED")
        assert (await client.get("/v1/settings", headers=tenant.secret)).json() == DEFAULTS

    @pytest.mark.parametrize(
        "body", [{"rateLimit": {"requestsPerMinute": 5}}, {"runConcurrency": 8}], ids=["rateLimit", "runs"]
    )
    async def test_operator_limits_are_read_only(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, object]
    ) -> None:
        response = await client.patch("/v1/settings", headers=tenant.secret, json=body)
        error = assert_error(
            response, 400, "BAD_REQUEST", operation_id="settings.update", reason="READ_ONLY_FIELD"
        )
        message = str(error["message"])
        assert message.startswith(next(iter(body))) and "orgs set-limit" in message
        assert (await client.get("/v1/settings", headers=tenant.secret)).json() == DEFAULTS

    async def test_run_concurrency_shows_the_operators_value(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, services: Services
    ) -> None:
        async with services.db.transaction() as conn:
            await set_run_concurrency(conn, services.signals, tenant.org_id, 9, now=services.clock.now())
        response = await client.get("/v1/settings", headers=tenant.secret)
        assert response.json() == {**DEFAULTS, "runConcurrency": 9}
        assert (await client.get("/v1/settings", headers=other_tenant.secret)).json() == DEFAULTS

    async def test_partial_update_is_isolated_per_organization(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        changes = {
            "defaultModel": "openai/gpt-4o-mini",
            "instructions": "Answer in French.",
            "logRetentionDays": 7,
            "allowedOrigins": ["https://app.example.com", "http://localhost:3000"],
            "billingEnforced": True,
        }
        response = await client.patch("/v1/settings", headers=tenant.secret, json=changes)
        assert response.status_code == 200 and response.json() == {**DEFAULTS, **changes}
        only_days = await client.patch("/v1/settings", headers=tenant.secret, json={"logRetentionDays": 90})
        assert only_days.json() == {**DEFAULTS, **changes, "logRetentionDays": 90}
        cleared = await client.patch("/v1/settings", headers=tenant.secret, json={"instructions": None})
        assert cleared.json()["instructions"] is None
        assert (await client.get("/v1/settings", headers=other_tenant.secret)).json() == DEFAULTS

    async def test_a_change_reaches_the_cached_principal_at_once(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        value = tenant.created.secret_value.encode()
        before = await services.authenticator.authenticate(value)
        assert before is not None and before.organization.billing_enforced is False
        await client.patch("/v1/settings", headers=tenant.secret, json={"billingEnforced": True})
        after = await services.authenticator.authenticate(value)
        assert after is not None and after.organization.billing_enforced is True
