"""The intake's authentication rules: public keys only, in ``x-service-key``."""

from __future__ import annotations

import httpx
import pytest

from tests.support import Tenant, assert_error


@pytest.fixture
def log_store() -> str:
    """One append path (conftest): keys are checked before anything is appended."""
    return "process"


@pytest.mark.parametrize(
    ("path", "operation_id"), [("/v1/logs", "logs.ingest"), ("/v1/events", "events.ingest")]
)
class TestIntakeAuthentication:
    async def test_no_key_is_401_naming_the_header(
        self, intake: httpx.AsyncClient, path: str, operation_id: str
    ) -> None:
        response = await intake.post(path, json={"message": "hi"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id=operation_id, missing=["x-service-key"])

    async def test_secret_key_is_403(
        self, intake: httpx.AsyncClient, tenant: Tenant, path: str, operation_id: str
    ) -> None:
        for headers in ({"x-service-key": tenant.created.secret_value}, tenant.secret):
            response = await intake.post(path, json={"message": "hi"}, headers=headers)
            assert_error(
                response, 403, "FORBIDDEN", operation_id=operation_id, reason="SECRET_KEY_NOT_ALLOWED"
            )

    async def test_revoked_public_key_is_401(
        self,
        intake: httpx.AsyncClient,
        client: httpx.AsyncClient,
        tenant: Tenant,
        path: str,
        operation_id: str,
    ) -> None:
        revoked = await client.delete(f"/v1/keys/{tenant.created.public_key.id}", headers=tenant.secret)
        assert revoked.status_code == 200
        response = await intake.post(path, json={"message": "hi"}, headers=tenant.public)
        assert_error(response, 401, "UNAUTHORIZED", operation_id=operation_id, reason="KEY_REVOKED")

    async def test_public_key_passes_authentication(
        self, intake: httpx.AsyncClient, tenant: Tenant, path: str, operation_id: str
    ) -> None:
        body = {"message": "hi"} if path == "/v1/logs" else {"name": "hi"}
        response = await intake.post(path, json=body, headers=tenant.public)
        assert response.status_code == 202, response.text
        assert response.json() == {"accepted": 1}
        assert response.headers["x-ratelimit-limit"] == "1000"
