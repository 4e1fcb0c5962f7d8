"""Idempotency-Key on POSTs: replays, reuse with another request, malformed keys, scope per organization,
24 hours (the clock is moved), and concurrent requests with one key making one resource, also across two
API processes sharing the database."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import Backend
from tests.support import Tenant, assert_error, running_server
from threadline.config import Settings
from threadline.kit.clock import ManualClock
from threadline.runtime import Services


def keyed(tenant: Tenant, key: str) -> dict[str, str]:
    return {**tenant.secret, "Idempotency-Key": key}


async def test_a_retry_answers_the_first_response(client: httpx.AsyncClient, tenant: Tenant) -> None:
    body = {"metadata": {"order": "42"}}
    first = await client.post("/v1/threads", headers=keyed(tenant, "order-42"), json=body)
    again = await client.post("/v1/threads", headers=keyed(tenant, "order-42"), json=body)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert again.headers["x-request-id"] != first.headers["x-request-id"]
    listed = (await client.get("/v1/threads", headers=tenant.secret)).json()["data"]
    assert [t["id"] for t in listed] == [first.json()["id"]]


async def test_no_key_no_change(client: httpx.AsyncClient, tenant: Tenant) -> None:
    one = await client.post("/v1/threads", headers=tenant.secret, json={})
    two = await client.post("/v1/threads", headers=tenant.secret, json={})
    assert one.json()["id"] != two.json()["id"]
    assert "idempotent-replayed" not in two.headers


async def test_errors_are_replayed_too(client: httpx.AsyncClient, tenant: Tenant) -> None:
    path = "/v1/threads/thr_missing/runs"
    first = await client.post(path, headers=keyed(tenant, "missing"), json={"input": "x"})
    again = await client.post(path, headers=keyed(tenant, "missing"), json={"input": "x"})
    assert first.status_code == again.status_code == 404
    assert again.json()["message"] == first.json()["message"]
    assert again.headers["idempotent-replayed"] == "true"


async def test_reuse_with_another_request_is_refused(client: httpx.AsyncClient, tenant: Tenant) -> None:
    await client.post("/v1/threads", headers=keyed(tenant, "k1"), json={"metadata": {"a": "1"}})
    other_body = await client.post("/v1/threads", headers=keyed(tenant, "k1"), json={"metadata": {"a": "2"}})
    assert_error(other_body, 409, "CONFLICT", operation_id="threads.create", reason="IDEMPOTENCY_KEY_REUSED")
    other_path = await client.post("/v1/projects", headers=keyed(tenant, "k1"), json={"name": "p"})
    assert_error(other_path, 409, "CONFLICT", operation_id="projects.create", reason="IDEMPOTENCY_KEY_REUSED")


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "caf\u00e9"])
async def test_malformed_keys(client: httpx.AsyncClient, tenant: Tenant, key: str) -> None:
    headers = [
        (b"authorization", tenant.secret["Authorization"].encode()),
        (b"idempotency-key", key.encode()),
    ]
    response = await client.post("/v1/threads", headers=headers, json={})
    assert_error(
        response, 400, "BAD_REQUEST", operation_id="threads.create", reason="VALIDATION_FAILED",
        missing=["Idempotency-Key"],
    )  # fmt: skip


async def test_keys_are_per_organization(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    mine = await client.post("/v1/threads", headers=keyed(tenant, "shared"), json={})
    theirs = await client.post("/v1/threads", headers=keyed(other_tenant, "shared"), json={})
    assert theirs.status_code == 201 and "idempotent-replayed" not in theirs.headers
    assert theirs.json()["id"] != mine.json()["id"]


async def test_kept_24_hours(client: httpx.AsyncClient, tenant: Tenant, services: Services) -> None:
    clock = ManualClock(datetime.now(UTC))
    services.clock = clock
    first = await client.post("/v1/threads", headers=keyed(tenant, "daily"), json={})
    clock.advance(24 * 3600 - 1)
    assert (await client.post("/v1/threads", headers=keyed(tenant, "daily"), json={})).json() == first.json()
    clock.advance(2)
    later = await client.post("/v1/threads", headers=keyed(tenant, "daily"), json={})
    assert later.status_code == 201 and "idempotent-replayed" not in later.headers
    assert later.json()["id"] != first.json()["id"]


async def test_concurrent_requests_make_one_resource(client: httpx.AsyncClient, tenant: Tenant) -> None:
    answers = await asyncio.gather(
        *(client.post("/v1/threads", headers=keyed(tenant, "burst"), json={}) for _ in range(10))
    )
    made = {a.json()["id"] for a in answers if a.status_code == 201}
    assert len(made) == 1
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["reason"] == "IDEMPOTENCY_KEY_IN_USE"
    assert len((await client.get("/v1/threads", headers=tenant.secret)).json()["data"]) == 1


@pytest.mark.distributed
def test_two_api_processes_agree(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    env = backend.env(settings)
    with running_server(env) as one, running_server(env) as two:
        urls = [one.api_url, two.api_url] * 10

        def post(url: str) -> httpx.Response:
            return httpx.post(
                f"{url}/v1/threads", headers=keyed(tenant, "two-processes"), json={}, timeout=30
            )

        with ThreadPoolExecutor(len(urls)) as pool:
            answers = list(pool.map(post, urls))
        made = {a.json()["id"] for a in answers if a.status_code == 201}
        assert len(made) == 1, [a.text for a in answers]
        assert {a.status_code for a in answers} <= {201, 409}
        assert all(a.json()["reason"] == "IDEMPOTENCY_KEY_IN_USE" for a in answers if a.status_code == 409)
        listed = httpx.get(f"{one.api_url}/v1/threads", headers=tenant.secret).json()["data"]
        assert [t["id"] for t in listed] == list(made)


async def test_housekeeping_sweeps_expired_keys(
    client: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    from threadline.idempotency.sweeper import IdempotencySweeper

    clock = ManualClock(datetime.now(UTC))
    services.clock = clock
    await client.post("/v1/threads", headers=keyed(tenant, "swept"), json={})
    from threadline.idempotency.tables import idempotency_keys

    mine = sa.select(sa.func.count()).where(idempotency_keys.c.organization_id == tenant.org_id)

    async def kept() -> int:
        async with services.db.transaction(write=False) as conn:
            return int((await conn.execute(mine)).scalar_one())

    sweeper = IdempotencySweeper(services.db, clock)
    clock.advance(24 * 3600 - 1)
    await sweeper.run_once()
    assert await kept() == 1
    clock.advance(2)
    assert await sweeper.run_once() >= 1  # every organization's expired keys, this one's among them
    assert await kept() == 0
