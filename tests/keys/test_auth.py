"""The spec's Authentication rules and DESIGN.md's error rows for credentials, on the API surface."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.limiter_answers import limiter_answers
from tests.support import Tenant, assert_error
from threadline.keys.tokens import generate_key
from threadline.runtime import Services


class TestSecretKeyForms:
    async def test_bearer_form(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/me", headers=tenant.secret)
        assert response.status_code == 200
        assert response.json()["organization"]["id"] == tenant.org_id

    async def test_x_service_secret_key_form(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        headers = {"x-service-secret-key": tenant.created.secret_value}
        response = await client.get("/v1/me", headers=headers)
        assert response.status_code == 200
        assert response.json()["key"]["id"] == tenant.created.secret_key.id

    async def test_bearer_scheme_is_case_insensitive(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(
            "/v1/me", headers={"Authorization": f"bearer {tenant.created.secret_value}"}
        )
        assert response.status_code == 200


class TestRefusals:
    async def test_no_credential_is_401_naming_the_header(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/me")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="me.get", missing=["Authorization"])

    async def test_unknown_key_is_401_invalid_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/keys", headers={"Authorization": f"Bearer {generate_key('secret')}"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="keys.list", reason="INVALID_KEY")

    @pytest.mark.parametrize(
        "value", ["Bearer", "Bearer nope", "Basic abc", "Bearer sk_short", "sk_" + "a" * 40]
    )
    async def test_malformed_credential_is_401_invalid_key(
        self, client: httpx.AsyncClient, value: str
    ) -> None:
        response = await client.get("/v1/projects", headers={"Authorization": value})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="projects.list", reason="INVALID_KEY")

    async def test_revoked_key_is_401_key_revoked(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        spare = await client.post("/v1/keys", headers=tenant.secret, json={"name": "spare", "type": "secret"})
        value, key_id = spare.json()["key"], spare.json()["id"]
        assert (await client.get("/v1/me", headers={"Authorization": f"Bearer {value}"})).status_code == 200
        assert (await client.delete(f"/v1/keys/{key_id}", headers=tenant.secret)).status_code == 200
        response = await client.get("/v1/me", headers={"Authorization": f"Bearer {value}"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="me.get", reason="KEY_REVOKED")

    async def test_public_key_on_the_api_is_403(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for headers in (
            {"Authorization": f"Bearer {tenant.created.public_value}"},
            {"x-service-secret-key": tenant.created.public_value},
            tenant.public,
        ):
            response = await client.get("/v1/me", headers=headers)
            assert_error(response, 403, "FORBIDDEN", operation_id="me.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_refusal_on_an_unknown_path_names_no_operation(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/nothing-here")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="unknown", missing=["Authorization"])

    async def test_refusals_carry_rate_limit_headers_of_the_client_address(
        self, client: httpx.AsyncClient, services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        answers = limiter_answers(services, monkeypatch)
        refusals = [
            await client.get("/v1/me"),
            await client.get("/v1/me", headers={"Authorization": f"Bearer {generate_key('secret')}"}),
            await client.get("/v1/me", headers=tenant.public),
            await client.post("/v1/projects", headers={**tenant.secret, "content-length": "99999999"}),
        ]
        assert [r.status_code for r in refusals] == [401, 401, 403, 413]
        # Each drew a token from one bucket, the same for all four: the client address's.
        [(address,)] = {buckets for buckets, _ in answers}
        assert len(answers) == 4 and ":ip:" in address.key and address.limit == 1000
        assert all(decision.allowed and decision.remaining < 1000 for _, decision in answers)
        remaining = [int(r.headers["x-ratelimit-remaining"]) for r in refusals]
        assert remaining == [decision.remaining for _, decision in answers]
        assert all(r.headers["x-ratelimit-limit"] == "1000" for r in refusals)
        # None of them touched the organization's own budget.
        me = await client.get("/v1/me", headers=tenant.secret)
        assert me.headers["x-ratelimit-remaining"] == "999"

    async def test_a_key_is_never_echoed_in_errors(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(
            "/v1/me", headers={"Authorization": f"Bearer {tenant.created.public_value}"}
        )
        assert tenant.created.public_value not in response.text


class TestKeyCache:
    async def test_concurrent_misses_share_one_lookup_and_survive_a_cancelled_waiter(
        self, services: Services, tenant: Tenant
    ) -> None:
        value = tenant.created.secret_value.encode()
        authenticator = services.authenticator
        first = asyncio.create_task(authenticator.authenticate(value))
        second = asyncio.create_task(authenticator.authenticate(value))
        await asyncio.sleep(0)  # both are now waiting on the same lookup
        first.cancel()
        principal = await second
        assert principal is not None and principal.organization_id == tenant.org_id
        with pytest.raises(asyncio.CancelledError):
            await first

    async def test_revocation_drops_the_cached_principal_at_once(
        self, client: httpx.AsyncClient, services: Services, tenant: Tenant
    ) -> None:
        value = tenant.created.secret_value.encode()
        assert (await services.authenticator.authenticate(value)) is not None  # cached now
        response = await client.delete(f"/v1/keys/{tenant.created.secret_key.id}", headers=tenant.secret)
        assert response.status_code == 200
        principal = await services.authenticator.authenticate(value)
        assert principal is not None and principal.key.revoked_at is not None
