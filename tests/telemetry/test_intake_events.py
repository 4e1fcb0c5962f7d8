"""``POST /v1/events``: every format but protobuf, its defaults, and the events it refuses."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.support import Tenant, assert_error, listed
from tests.telemetry.intake_helpers import (
    JSON,
    NDJSON,
    gz,
    ndjson,
    otlp_json,
    otlp_protobuf,
    protobuf_headers,
    rpc_status,
    stored_count,
)
from threadline.runtime import Services

EVENT = {"name": "signup", "properties": {"plan": "pro", "seats": 3}, "distinctId": "user_1"}
EVENT_FORMATS = [
    ("object", JSON, json.dumps(EVENT).encode(), 1),
    ("array", JSON, json.dumps([EVENT, {**EVENT, "name": "upgrade"}]).encode(), 2),
    ("ndjson", NDJSON, ndjson(EVENT, {**EVENT, "name": "upgrade"}), 2),
]


@pytest.mark.parametrize("gzipped", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize(
    ("content_type", "body", "count"), [f[1:] for f in EVENT_FORMATS], ids=[f[0] for f in EVENT_FORMATS]
)
async def test_events_in_every_format(
    intake: httpx.AsyncClient,
    client: httpx.AsyncClient,
    tenant: Tenant,
    content_type: str,
    body: bytes,
    count: int,
    gzipped: bool,
) -> None:
    """Events (object, array, NDJSON; plain or gzip) are stored as kind ``event``: the name is also the
    message, with properties and distinctId kept and the log-only fields empty."""
    headers = {**tenant.public, "content-type": content_type}
    if gzipped:
        headers["content-encoding"] = "gzip"
        body = gz(body)
    response = await intake.post("/v1/events", content=body, headers=headers)
    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": count}
    records = await listed(client, tenant, kind="event")
    assert [r["name"] for r in records] == ["upgrade", "signup"][-count:]
    for record in records:
        assert record["kind"] == "event"
        assert record["message"] == record["name"]
        assert record["properties"] == {"plan": "pro", "seats": 3}
        assert record["distinctId"] == "user_1"
        assert record["level"] == "info"
        assert record["attributes"] == {}
        assert record["traceId"] is None and record["spanId"] is None


async def test_event_defaults_and_timestamp(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """An event with only a name has empty properties and no distinctId; its timestamp may be Unix time."""
    body = [{"name": "bare"}, {"name": "timed", "timestamp": 1_700_000_000}]
    assert (await intake.post("/v1/events", json=body, headers=tenant.public)).status_code == 202
    timed, bare = await listed(client, tenant)
    assert (bare["properties"], bare["distinctId"]) == ({}, None)
    assert timed["timestamp"] == "2023-11-14T22:13:20.000Z"


@pytest.mark.parametrize(
    ("record", "field", "missing"),
    [
        ({"name": ""}, "[1].name", []),
        ({"name": "x" * 257}, "[1].name", []),
        ({"properties": {}}, "[1].name", ["[1].name"]),
        ({"name": "x", "message": "logs only"}, "[1].message", []),
        ({"name": "x", "distinctId": 5}, "[1].distinctId", []),
    ],
)
async def test_bad_event_is_400_naming_the_record(
    intake: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    record: dict[str, Any],
    field: str,
    missing: list[str],
) -> None:
    """Events are validated like log records: the index and field are named, missing ones listed."""
    response = await intake.post("/v1/events", json=[{"name": "fine"}, record], headers=tenant.public)
    error = assert_error(
        response,
        400,
        "BAD_REQUEST",
        operation_id="events.ingest",
        reason="VALIDATION_FAILED",
        missing=missing,
    )
    assert field in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


async def test_events_refuse_protobuf(intake: httpx.AsyncClient, services: Services, tenant: Tenant) -> None:
    """OTLP is a logs format: protobuf to /v1/events is 415 (answered as a protobuf Status, like every
    error to a protobuf request) and nothing is stored."""
    request = otlp_protobuf(LogRecord(body=AnyValue(string_value="x")))
    response = await intake.post(
        "/v1/events", content=request.SerializeToString(), headers=protobuf_headers(tenant)
    )
    assert response.status_code == 415
    status = rpc_status(response)
    assert status.code == 3  # INVALID_ARGUMENT
    assert "events" in status.message
    assert await stored_count(services, tenant.org_id) == 0


async def test_events_do_not_read_otlp_json(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """An OTLP JSON body sent to /v1/events is not an event: 400, nothing stored."""
    response = await intake.post(
        "/v1/events", json=otlp_json({"body": {"stringValue": "x"}}), headers=tenant.public
    )
    error = assert_error(
        response,
        400,
        "BAD_REQUEST",
        operation_id="events.ingest",
        reason="VALIDATION_FAILED",
        missing=["[0].name"],
    )
    assert "[0].resourceLogs: unknown field" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0
