"""CORS on the intake: preflights, each organization's allowed origins, and what a browser sees of a 403
or a 401."""

from __future__ import annotations

import httpx
import pytest

from tests.support import Tenant, assert_error, listed
from tests.telemetry.intake_helpers import ORIGIN, OTHER_ORIGIN, stored_count
from threadline.keys.tokens import generate_key
from threadline.runtime import Services


@pytest.fixture
async def restricted(client: httpx.AsyncClient, tenant: Tenant) -> Tenant:
    """``tenant`` with allowedOrigins set to ``ORIGIN`` only."""
    response = await client.patch("/v1/settings", headers=tenant.secret, json={"allowedOrigins": [ORIGIN]})
    assert response.status_code == 200, response.text
    assert response.json()["allowedOrigins"] == [ORIGIN]
    return tenant


def preflight_headers(origin: str) -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, x-service-key",
    }


@pytest.mark.parametrize("path", ["/v1/logs", "/v1/events"])
async def test_preflight_without_key_lets_the_browser_go_on(intake: httpx.AsyncClient, path: str) -> None:
    """Without ``?key=`` the preflight cannot know the organization: it allows the origin, and the real
    request is where the organization's allowedOrigins are enforced."""
    response = await intake.options(path, headers=preflight_headers(OTHER_ORIGIN))
    assert response.status_code == 204
    assert response.content == b""
    assert response.headers["access-control-allow-origin"] == OTHER_ORIGIN
    assert "POST" in response.headers["access-control-allow-methods"]
    allowed_headers = response.headers["access-control-allow-headers"]
    assert "x-service-key" in allowed_headers and "content-encoding" in allowed_headers
    assert "Origin" in response.headers["vary"]


async def test_preflight_with_key_follows_allowed_origins(
    intake: httpx.AsyncClient, restricted: Tenant
) -> None:
    """With the public key in the URL, the preflight answers for the organization: its origin is echoed,
    any other gets no Access-Control-Allow-Origin (the browser then stops)."""
    params = {"key": restricted.created.public_value}
    allowed = await intake.options("/v1/logs", params=params, headers=preflight_headers(ORIGIN))
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert "Origin" in allowed.headers["vary"]
    other = await intake.options("/v1/logs", params=params, headers=preflight_headers(OTHER_ORIGIN))
    assert other.status_code == 204
    assert "access-control-allow-origin" not in other.headers
    assert "access-control-allow-methods" not in other.headers


async def test_preflight_origin_match_is_case_insensitive(
    intake: httpx.AsyncClient, restricted: Tenant
) -> None:
    """Origins compare case-insensitively; the origin is echoed as the browser sent it."""
    params = {"key": restricted.created.public_value}
    response = await intake.options("/v1/logs", params=params, headers=preflight_headers(ORIGIN.upper()))
    assert response.headers["access-control-allow-origin"] == ORIGIN.upper()


async def test_post_from_allowed_origin_carries_acao(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, restricted: Tenant
) -> None:
    """The real request from an allowed origin is stored and names that origin (never ``*``)."""
    response = await intake.post(
        "/v1/logs", json={"message": "from the page"}, headers={**restricted.public, "origin": ORIGIN}
    )
    assert response.status_code == 202, response.text
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "x-ratelimit-remaining" in response.headers["access-control-expose-headers"]
    assert "Origin" in response.headers["vary"]
    assert [r["message"] for r in await listed(client, restricted)] == ["from the page"]


@pytest.mark.parametrize("path", ["/v1/logs", "/v1/events"])
async def test_post_from_disallowed_origin_is_403_and_stores_nothing(
    intake: httpx.AsyncClient, services: Services, restricted: Tenant, path: str
) -> None:
    """A page from an origin the organization did not allow is refused with ORIGIN_NOT_ALLOWED, carries no
    ACAO, and nothing it sent is stored."""
    response = await intake.post(
        path, json={"message": "x", "name": "x"}, headers={**restricted.public, "origin": OTHER_ORIGIN}
    )
    error = assert_error(
        response, 403, "FORBIDDEN", operation_id=path[4:] + ".ingest", reason="ORIGIN_NOT_ALLOWED"
    )
    assert OTHER_ORIGIN in str(error["message"])
    assert "access-control-allow-origin" not in response.headers
    assert await stored_count(services, restricted.org_id) == 0


async def test_server_to_server_requests_ignore_allowed_origins(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, restricted: Tenant
) -> None:
    """A request without Origin (a backend, a collector) is not a browser's: no CORS, no origin check."""
    response = await intake.post("/v1/logs", json={"message": "server"}, headers=restricted.public)
    assert response.status_code == 202
    assert "access-control-allow-origin" not in response.headers
    assert [r["message"] for r in await listed(client, restricted)] == ["server"]


async def test_default_settings_allow_any_origin(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """With allowedOrigins left at its default (``*``) any page may send, and the answer says ``*``."""
    response = await intake.post(
        "/v1/logs", json={"message": "x"}, headers={**tenant.public, "origin": OTHER_ORIGIN}
    )
    assert response.status_code == 202, response.text
    assert response.headers["access-control-allow-origin"] == "*"
    preflight = await intake.options(
        "/v1/logs", params={"key": tenant.created.public_value}, headers=preflight_headers(OTHER_ORIGIN)
    )
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert len(await listed(client, tenant)) == 1


async def test_401_echoes_the_origin(intake: httpx.AsyncClient) -> None:
    """An error answered before any key was accepted echoes the origin, so the page can read why."""
    response = await intake.post(
        "/v1/logs",
        json={"message": "x"},
        headers={"origin": OTHER_ORIGIN, "x-service-key": generate_key("public")},
    )
    assert_error(response, 401, "UNAUTHORIZED", operation_id="logs.ingest", reason="INVALID_KEY")
    assert response.headers["access-control-allow-origin"] == OTHER_ORIGIN


async def test_preflights_naming_a_key_are_throttled_by_address(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key in the URL costs a lookup, so such preflights draw from the client address's bucket."""
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"default_rate_limit_per_minute": 2})
    )
    url = f"/v1/logs?key={tenant.created.public_value}"
    answers = [
        (await intake.options(url, headers=preflight_headers("https://app.example.com"))).status_code
        for _ in range(3)
    ]
    assert answers == [204, 204, 429]
