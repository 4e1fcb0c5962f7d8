"""Several API processes on one PostgreSQL and one Redis behave as one service."""

from __future__ import annotations

import asyncio
import math
import time

import httpx
import pytest

from tests.conftest import Backend
from tests.support import Tenant, running_server
from threadline.config import Settings
from threadline.provisioning import set_rate_limit
from threadline.runtime import Services

pytestmark = pytest.mark.distributed


def test_a_revoked_key_fails_on_another_process_within_a_second(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    env = backend.env(settings)
    with running_server(env) as a, running_server(env) as b:
        created = httpx.post(
            f"{a.api_url}/v1/keys", headers=tenant.secret, json={"name": "spare", "type": "secret"}
        )
        spare = {"Authorization": f"Bearer {created.json()['key']}"}
        assert httpx.get(f"{b.api_url}/v1/me", headers=spare).status_code == 200  # now cached on B
        assert (
            httpx.delete(f"{a.api_url}/v1/keys/{created.json()['id']}", headers=tenant.secret).status_code
            == 200
        )
        revoked_at = time.monotonic()
        with httpx.Client() as http:
            while (response := http.get(f"{b.api_url}/v1/me", headers=spare)).status_code == 200:
                assert time.monotonic() - revoked_at < 1.0, "process B still accepts a revoked key after 1 s"
        assert time.monotonic() - revoked_at < 1.0
        assert response.status_code == 401 and response.json()["reason"] == "KEY_REVOKED"


async def test_two_processes_share_one_budget(
    backend: Backend, settings: Settings, tenant: Tenant, services: Services
) -> None:
    async with services.db.transaction() as conn:
        await set_rate_limit(conn, services.signals, tenant.org_id, 60, now=services.clock.now())
    env = backend.env(settings)
    with running_server(env) as a, running_server(env) as b:
        urls = [f"{a.api_url}/v1/projects", f"{b.api_url}/v1/projects"]
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=32)) as http:
            started = time.monotonic()
            responses = await asyncio.gather(
                *(http.get(urls[i % 2], headers=tenant.secret) for i in range(120))
            )  # concurrent, so the script's atomicity is what keeps the count right
            elapsed = time.monotonic() - started
        statuses = [r.status_code for r in responses]
    succeeded = statuses.count(200)
    refilled = math.ceil(elapsed * 60 / 60)  # 60 per minute is one token a second
    assert set(statuses) == {200, 429}
    assert 60 <= succeeded <= 60 + refilled, (succeeded, elapsed)
