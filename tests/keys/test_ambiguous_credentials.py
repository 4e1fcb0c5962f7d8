"""A request naming two different keys is refused (400 AMBIGUOUS_CREDENTIAL): which one was meant is not
ours to guess, and taking the last header silently let a proxy's or a library's header override the
caller's own."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.support import Tenant, assert_error
from threadline.intake_app import create_intake_app
from threadline.runtime import Services


def _secret(tenant: Tenant) -> str:
    return tenant.secret["Authorization"].removeprefix("Bearer ")


async def test_two_authorization_headers_with_different_keys(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    headers = [
        ("Authorization", f"Bearer {_secret(tenant)}"),
        ("Authorization", f"Bearer {_secret(other_tenant)}"),
    ]
    response = await client.get("/v1/me", headers=headers)
    assert_error(response, 400, "BAD_REQUEST", operation_id="me.get", reason="AMBIGUOUS_CREDENTIAL")


async def test_authorization_and_the_secret_header_with_different_keys(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    headers = {"Authorization": f"Bearer {_secret(tenant)}", "x-service-secret-key": _secret(other_tenant)}
    response = await client.get("/v1/me", headers=headers)
    assert_error(response, 400, "BAD_REQUEST", operation_id="me.get", reason="AMBIGUOUS_CREDENTIAL")


@pytest.mark.parametrize("second", ["Authorization", "x-service-secret-key"])
async def test_the_same_key_twice_is_harmless(client: httpx.AsyncClient, tenant: Tenant, second: str) -> None:
    value = f"Bearer {_secret(tenant)}" if second == "Authorization" else _secret(tenant)
    response = await client.get(
        "/v1/me", headers=[("Authorization", f"Bearer {_secret(tenant)}"), (second, value)]
    )
    assert response.status_code == 200, response.text


async def test_the_intake_refuses_two_different_public_keys(
    app: FastAPI, services: Services, tenant: Tenant, other_tenant: Tenant
) -> None:
    intake = create_intake_app(services.settings, services)
    transport = httpx.ASGITransport(app=intake)
    async with intake.router.lifespan_context(intake), httpx.AsyncClient(transport=transport) as http:
        headers = [
            ("x-service-key", tenant.public["x-service-key"]),
            ("x-service-key", other_tenant.public["x-service-key"]),
        ]
        response = await http.post("http://intake/v1/logs", json={"message": "whose?"}, headers=headers)
    assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="AMBIGUOUS_CREDENTIAL")
