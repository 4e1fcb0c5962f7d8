"""Rate limits and tenancy on the intake: the organization's budget, apart from the API's; each
organization's records and keys its own."""

from __future__ import annotations

import httpx
import sqlalchemy as sa
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.support import Tenant, assert_error, listed
from tests.telemetry.intake_helpers import ORIGIN, otlp_protobuf, protobuf_headers, rpc_status, stored_count
from threadline.provisioning import set_rate_limit
from threadline.runtime import Services


async def test_intake_answers_429_past_the_organization_limit(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """Past the organization's per-minute budget the intake answers 429 with Retry-After and the rate-limit
    headers, to JSON and protobuf requests alike, and stores nothing more."""
    async with services.db.transaction() as conn:
        await set_rate_limit(conn, services.signals, tenant.org_id, 2, now=services.clock.now())
    statuses = []
    for _ in range(2):
        response = await intake.post("/v1/logs", json={"message": "x"}, headers=tenant.public)
        statuses.append(response.status_code)
        assert response.headers["x-ratelimit-limit"] == "2"
    assert statuses == [202, 202]
    limited = await intake.post(
        "/v1/logs", json={"message": "x"}, headers={**tenant.public, "origin": ORIGIN}
    )
    body = assert_error(limited, 429, "TOO_MANY_REQUESTS", operation_id="logs.ingest")
    assert int(limited.headers["retry-after"]) >= 1
    assert body["retryAfterSeconds"] == int(limited.headers["retry-after"])
    assert limited.headers["x-ratelimit-limit"] == "2"
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert int(limited.headers["x-ratelimit-reset"]) > 0
    assert limited.headers["access-control-allow-origin"] == ORIGIN  # refused before the key: echoed
    request = otlp_protobuf(LogRecord(body=AnyValue(string_value="x"))).SerializeToString()
    protobuf = await intake.post("/v1/logs", content=request, headers=protobuf_headers(tenant))
    assert protobuf.status_code == 429
    assert rpc_status(protobuf).code == 8  # RESOURCE_EXHAUSTED
    assert int(protobuf.headers["retry-after"]) >= 1
    assert await stored_count(services, tenant.org_id) == 2


async def test_intake_budget_is_apart_from_the_api(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """The intake and the API have separate buckets: an exhausted intake leaves the API answering."""
    async with services.db.transaction() as conn:
        await set_rate_limit(conn, services.signals, tenant.org_id, 1, now=services.clock.now())
    assert (await intake.post("/v1/logs", json={"message": "x"}, headers=tenant.public)).status_code == 202
    assert (await intake.post("/v1/logs", json={"message": "x"}, headers=tenant.public)).status_code == 429
    assert (await client.get("/v1/logs", headers=tenant.secret)).status_code == 200


async def test_records_are_invisible_to_other_organizations(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """What one organization's key sends only that organization reads, logs and events alike."""
    await intake.post("/v1/logs", json={"message": "acme secret"}, headers=tenant.public)
    await intake.post("/v1/events", json={"name": "acme signup"}, headers=tenant.public)
    await intake.post("/v1/logs", json={"message": "globex line"}, headers=other_tenant.public)
    mine = await listed(client, tenant)
    theirs = await listed(client, other_tenant)
    assert sorted(r["message"] for r in mine) == ["acme secret", "acme signup"]
    assert {r["projectId"] for r in mine} == {tenant.project_id}
    assert [r["message"] for r in theirs] == ["globex line"]
    assert await listed(client, other_tenant, q="acme") == []


async def test_key_of_a_project_deleted_a_moment_ago_is_401_not_500(
    intake: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    """The key may still be cached for a moment after its project is gone; the insert's foreign key then
    refuses the record, and the client hears why instead of a 500."""
    assert (
        await intake.post("/v1/logs", json={"message": "before"}, headers=tenant.public)
    ).status_code == 202
    async with services.db.transaction() as conn:
        await conn.execute(sa.text("DELETE FROM projects WHERE id = :id"), {"id": tenant.project_id})
    response = await intake.post("/v1/logs", json={"message": "after"}, headers=tenant.public)
    assert response.status_code == 401, response.text
    assert response.json()["reason"] == "INVALID_KEY"
