"""Telemetry sent to the API's port is told where the intake is (421 ``USE_INTAKE``), whatever the key;
reading logs on the API is unchanged. (Through a real ``threadline serve``: tests/cli/test_operator.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support import Tenant, assert_error
from threadline.app import create_app
from threadline.config import Settings
from threadline.runtime import Services

_PATHS = [("/v1/logs", "logs.ingest", "Log records"), ("/v1/events", "events.ingest", "Events")]


@pytest.fixture
def log_store() -> str:
    """One append path (conftest): nothing is appended here."""
    return "process"


@pytest.fixture
async def api_knowing_intake(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """The API app as ``threadline serve`` builds it, with its intake on port 9181."""
    app = create_app(settings, services, chores=False, intake_port=9181)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api.example:9180") as http:
            yield http


@pytest.mark.parametrize(("path", "operation_id", "what"), _PATHS)
class TestTelemetryOnTheApiPort:
    async def test_names_the_intake_address_whatever_the_key(
        self, api_knowing_intake: httpx.AsyncClient, tenant: Tenant, path: str, operation_id: str, what: str
    ) -> None:
        for headers in (tenant.public, tenant.secret, {"x-service-key": "pk_forged"}, {}):
            response = await api_knowing_intake.post(path, json={"message": "hi"}, headers=headers)
            body = assert_error(
                response, 421, "MISDIRECTED_REQUEST", operation_id=operation_id, reason="USE_INTAKE"
            )
            message = str(body["message"])
            assert f"send them to http://api.example:9181{path}" in message, message
            assert message.startswith(f"This is the API. {what} are received by the telemetry intake")
            # Charged to the client address like any request that names no organization.
            assert response.headers["x-ratelimit-limit"] == "1000"

    async def test_without_a_known_intake_names_the_setting(
        self, client: httpx.AsyncClient, tenant: Tenant, path: str, operation_id: str, what: str
    ) -> None:
        """The API app alone (under another ASGI server) does not know the intake's port: it says where
        that is set."""
        response = await client.post(path, json={"message": "hi"}, headers=tenant.public)
        body = assert_error(
            response, 421, "MISDIRECTED_REQUEST", operation_id=operation_id, reason="USE_INTAKE"
        )
        assert "threadline serve --intake-port, 8081 by default" in str(body["message"])


async def test_reading_logs_with_the_secret_key_is_unchanged(
    api_knowing_intake: httpx.AsyncClient, tenant: Tenant
) -> None:
    response = await api_knowing_intake.get("/v1/logs", headers=tenant.secret)
    assert response.status_code == 200 and response.json() == {"data": [], "nextCursor": None}
    response = await api_knowing_intake.get("/v1/logs", headers=tenant.public)
    assert_error(response, 403, "FORBIDDEN", operation_id="logs.list", reason="PUBLIC_KEY_NOT_ALLOWED")
    # Another method than POST on the path is the API's usual 405, not the intake's pointer.
    response = await api_knowing_intake.put("/v1/logs", headers=tenant.secret)
    assert_error(response, 405, "METHOD_NOT_ALLOWED", operation_id="unknown")


async def test_an_ipv6_host_keeps_its_brackets(settings: Settings, services: Services) -> None:
    app = create_app(settings, services, chores=False, intake_port=9181)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://[::1]:9180") as http:
            response = await http.post("/v1/logs", json={"message": "hi"})
    assert "http://[::1]:9181/v1/logs" in response.json()["message"]
