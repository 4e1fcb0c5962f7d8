"""The telemetry intake end to end: every body format (plain and gzip), validation and limits, OTLP's
protobuf errors, CORS, rate limits and tenancy. What was stored is read back through ``GET /v1/logs`` or
counted in ``log_records`` directly."""

from __future__ import annotations

import gzip
import json
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs, SeverityNumber
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from tests.support import Tenant, assert_error, listed
from threadline.keys.tokens import generate_key
from threadline.organizations.service import set_rate_limit
from threadline.runtime import Services
from threadline.telemetry.tables import log_records

MIB = 1024 * 1024
TRACE = "4BF92F3577B34DA6A3CE929D0E0E4736"
SPAN = "00F067AA0BA902B7"
ORIGIN = "https://app.example.com"
OTHER_ORIGIN = "https://evil.example.net"
JSON = "application/json"
NDJSON = "application/x-ndjson"
PROTOBUF = "application/x-protobuf"


# --- helpers ---------------------------------------------------------------------------------------------


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def ndjson(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def kv(key: str, **value: Any) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def otlp_json(*records: dict[str, Any]) -> dict[str, Any]:
    """An OTLP/HTTP JSON export: one resource, one scope, ``records`` as given."""
    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [
                        {"key": "service.name", "value": {"stringValue": "checkout"}},
                        {"key": "host.cores", "value": {"intValue": "8"}},
                    ]
                },
                "scopeLogs": [
                    {
                        "scope": {
                            "name": "checkout.http",
                            "version": "1.2.3",
                            "attributes": [{"key": "lib", "value": {"stringValue": "httpx"}}],
                        },
                        "logRecords": list(records),
                    }
                ],
            }
        ]
    }


def otlp_protobuf(*records: LogRecord) -> ExportLogsServiceRequest:
    """An OTLP protobuf export with the same resource and scope as ``otlp_json``."""
    return ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                resource=Resource(
                    attributes=[kv("service.name", string_value="checkout"), kv("host.cores", int_value=8)]
                ),
                scope_logs=[
                    ScopeLogs(
                        scope=InstrumentationScope(
                            name="checkout.http",
                            version="1.2.3",
                            attributes=[kv("lib", string_value="httpx")],
                        ),
                        log_records=list(records),
                    )
                ],
            )
        ]
    )


def protobuf_headers(tenant: Tenant) -> dict[str, str]:
    return {**tenant.public, "content-type": PROTOBUF}


async def stored_count(services: Services, organization_id: str) -> int:
    """Rows in ``log_records`` for the organization, whatever the API would show."""
    async with services.db.transaction(write=False) as conn:
        query = (
            sa.select(sa.func.count())
            .select_from(log_records)
            .where(log_records.c.organization_id == organization_id)
        )
        count: int = (await conn.execute(query)).scalar_one()
    return count


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def rpc_status(response: httpx.Response) -> Status:
    """The body of an error answered to an OTLP protobuf request."""
    assert response.headers["content-type"] == PROTOBUF
    return Status.FromString(response.content)


@pytest.fixture
async def restricted(client: httpx.AsyncClient, tenant: Tenant) -> Tenant:
    """``tenant`` with allowedOrigins set to ``ORIGIN`` only."""
    response = await client.patch("/v1/settings", headers=tenant.secret, json={"allowedOrigins": [ORIGIN]})
    assert response.status_code == 200, response.text
    assert response.json()["allowedOrigins"] == [ORIGIN]
    return tenant


# --- every body format, plain and gzip ------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    name: str
    content_type: str
    body: bytes
    messages: tuple[str, ...]  # in the order sent


FORMATS = [
    Format("object", JSON, json.dumps({"message": "only"}).encode(), ("only",)),
    Format(
        "array", JSON, json.dumps([{"message": "first"}, {"message": "second"}]).encode(), ("first", "second")
    ),
    Format("ndjson", NDJSON, ndjson({"message": "first"}, {"message": "second"}), ("first", "second")),
    Format(
        "otlp-json",
        JSON,
        json.dumps(
            otlp_json({"body": {"stringValue": "first"}}, {"body": {"stringValue": "second"}})
        ).encode(),
        ("first", "second"),
    ),
    Format(
        "otlp-protobuf",
        PROTOBUF,
        otlp_protobuf(
            LogRecord(body=AnyValue(string_value="first")), LogRecord(body=AnyValue(string_value="second"))
        ).SerializeToString(),
        ("first", "second"),
    ),
]


@pytest.mark.parametrize("gzipped", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
async def test_every_log_format_is_stored(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant, fmt: Format, gzipped: bool
) -> None:
    """Each body format, with or without gzip, stores every record and answers in its own protocol's terms:
    202 {accepted} for our JSON forms, 200 with an ExportLogsServiceResponse for OTLP."""
    headers = {**tenant.public, "content-type": fmt.content_type}
    body = fmt.body
    if gzipped:
        headers["content-encoding"] = "gzip"
        body = gz(body)
    response = await intake.post("/v1/logs", content=body, headers=headers)
    if fmt.name == "otlp-protobuf":
        assert response.status_code == 200, response.content
        assert response.headers["content-type"] == PROTOBUF
        assert not ExportLogsServiceResponse.FromString(response.content).HasField("partial_success")
    elif fmt.name == "otlp-json":
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == JSON
        assert response.json() == {}
    else:
        assert response.status_code == 202, response.text
        assert response.headers["content-type"] == JSON
        assert response.json() == {"accepted": len(fmt.messages)}
    records = await listed(client, tenant)
    assert [r["message"] for r in records] == list(reversed(fmt.messages))  # newest first
    assert {(r["kind"], r["projectId"]) for r in records} == {("log", tenant.project_id)}


async def test_one_json_object_keeps_every_field(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Every field of a record survives the round trip; ids are lowercased, events-only fields are null."""
    record = {
        "message": "payment declined",
        "level": "error",
        "timestamp": "2024-03-01T12:00:00.250Z",
        "attributes": {"order": {"id": 42, "items": ["a", "b"]}, "retry": False, "ratio": 0.5, "none": None},
        "traceId": TRACE,
        "spanId": SPAN,
    }
    response = await intake.post("/v1/logs", json=record, headers=tenant.public)
    assert response.status_code == 202, response.text
    [stored] = await listed(client, tenant)
    assert stored["id"].startswith("log_")
    assert stored["kind"] == "log"
    assert stored["projectId"] == tenant.project_id
    assert stored["message"] == "payment declined"
    assert stored["level"] == "error"
    assert stored["timestamp"] == "2024-03-01T12:00:00.250Z"
    assert stored["attributes"] == record["attributes"]
    assert stored["traceId"] == TRACE.lower()
    assert stored["spanId"] == SPAN.lower()
    assert stored["name"] is None
    assert stored["properties"] is None
    assert stored["distinctId"] is None
    assert stored["receivedAt"].endswith("Z")


async def test_json_array_keeps_order_and_defaults(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """An array is stored in the order sent (ids follow it), each record with its own defaults."""
    body = [{"message": f"m{i}"} for i in range(5)]
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    assert response.json() == {"accepted": 5}
    records = await listed(client, tenant)
    assert [r["message"] for r in records] == ["m4", "m3", "m2", "m1", "m0"]
    assert [r["id"] for r in records] == sorted((r["id"] for r in records), reverse=True)
    assert {r["level"] for r in records} == {"info"}
    assert all(r["attributes"] == {} and r["traceId"] is None for r in records)


async def test_ndjson_tolerates_blank_lines_and_crlf(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """NDJSON is one record per line; blank lines and Windows line ends are not records."""
    body = b'{"message":"a"}\r\n\r\n{"message":"b","level":"debug"}\r\n\n'
    response = await intake.post("/v1/logs", content=body, headers={**tenant.public, "content-type": NDJSON})
    assert response.json() == {"accepted": 2}
    assert [(r["message"], r["level"]) for r in await listed(client, tenant)] == [
        ("b", "debug"),
        ("a", "info"),
    ]


async def test_otlp_json_maps_ids_severity_and_attributes(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """OTLP JSON: hex trace/span ids, severity bands, the body's stringValue, resource and scope attributes
    flattened under ``resource.``/``scope.`` with the record's own attributes winning."""
    body = otlp_json(
        {
            "timeUnixNano": "1700000000123000000",
            "severityNumber": 13,
            "severityText": "WARN",
            "body": {"stringValue": "slow upstream"},
            "traceId": TRACE,
            "spanId": SPAN,
            "attributes": [
                {"key": "attempt", "value": {"intValue": "3"}},
                {"key": "resource.service.name", "value": {"stringValue": "mine"}},
            ],
        },
        {
            "severityText": "critical",
            "body": {"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}]}},
        },
    )
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == JSON
    assert response.json() == {}
    structured, warning = await listed(client, tenant)
    assert warning["message"] == "slow upstream"
    assert warning["level"] == "warn"
    assert warning["timestamp"] == "2023-11-14T22:13:20.123Z"
    assert warning["traceId"] == TRACE.lower()
    assert warning["spanId"] == SPAN.lower()
    assert warning["attributes"] == {
        "resource.service.name": "mine",  # the record's own attribute wins
        "resource.host.cores": 8,
        "scope.lib": "httpx",
        "scope.name": "checkout.http",
        "scope.version": "1.2.3",
        "attempt": 3,
    }
    assert structured["level"] == "fatal"  # no severityNumber: the text, normalised
    assert json.loads(structured["message"]) == {"a": True}  # a non-string body is stored as JSON text
    assert structured["traceId"] is None and structured["spanId"] is None


async def test_otlp_protobuf_maps_values_and_answers_protobuf(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """OTLP protobuf: 200 with an ExportLogsServiceResponse, and every AnyValue kind stored as JSON."""
    started = datetime.now(UTC)
    request = otlp_protobuf(
        LogRecord(
            time_unix_nano=1_700_000_000_123_000_000,
            severity_number=SeverityNumber.SEVERITY_NUMBER_ERROR,
            body=AnyValue(string_value="payment declined"),
            trace_id=bytes.fromhex(TRACE),
            span_id=bytes.fromhex(SPAN),
            attributes=[
                kv("http.status", int_value=402),
                kv("ratio", double_value=0.25),
                kv("retry", bool_value=False),
                kv("raw", bytes_value=b"\x00\x01"),
                kv(
                    "tags", array_value=ArrayValue(values=[AnyValue(string_value="a"), AnyValue(int_value=1)])
                ),
                kv("nested", kvlist_value=KeyValueList(values=[kv("k", string_value="v")])),
            ],
        ),
        LogRecord(
            observed_time_unix_nano=1_700_000_001_000_000_000,
            severity_number=SeverityNumber.SEVERITY_NUMBER_DEBUG2,
            body=AnyValue(int_value=7),
        ),
        LogRecord(severity_text="WARNING"),
    )
    response = await intake.post(
        "/v1/logs", content=request.SerializeToString(), headers=protobuf_headers(tenant)
    )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"] == PROTOBUF
    assert response.content == ExportLogsServiceResponse().SerializeToString()
    ExportLogsServiceResponse.FromString(response.content)
    empty, observed, full = await listed(client, tenant)
    assert full["message"] == "payment declined"
    assert full["level"] == "error"
    assert full["timestamp"] == "2023-11-14T22:13:20.123Z"
    assert (full["traceId"], full["spanId"]) == (TRACE.lower(), SPAN.lower())
    assert full["attributes"] == {
        "resource.service.name": "checkout",
        "resource.host.cores": 8,
        "scope.lib": "httpx",
        "scope.name": "checkout.http",
        "scope.version": "1.2.3",
        "http.status": 402,
        "ratio": 0.25,
        "retry": False,
        "raw": "AAE=",
        "tags": ["a", 1],
        "nested": {"k": "v"},
    }
    assert (observed["message"], observed["level"]) == ("7", "debug")
    assert observed["timestamp"] == "2023-11-14T22:13:21.000Z"  # observed time when there is no time
    assert (empty["message"], empty["level"]) == ("", "warn")
    assert parse_time(empty["timestamp"]) >= started - timedelta(milliseconds=1)  # no time at all: receipt


@pytest.mark.parametrize(
    ("nanos", "stored"),
    [
        (1_700_000_000_999_999_999, "2023-11-14T22:13:20.999Z"),  # a float division made it :21.000
        (1_700_000_000_000_999_999, "2023-11-14T22:13:20.000Z"),
        (2**64 - 1, "2554-07-21T23:34:33.709Z"),  # the largest fixed64
    ],
)
async def test_otlp_nanoseconds_are_exact(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant, nanos: int, stored: str
) -> None:
    """OTLP times are integer nanoseconds: they are truncated, never rounded into the next millisecond or
    second, and the whole fixed64 range is storable."""
    request = otlp_protobuf(LogRecord(time_unix_nano=nanos, body=AnyValue(string_value="t")))
    response = await intake.post(
        "/v1/logs", content=request.SerializeToString(), headers=protobuf_headers(tenant)
    )
    assert response.status_code == 200, response.content
    [record] = await listed(client, tenant)
    assert record["timestamp"] == stored


# --- levels and timestamps ------------------------------------------------------------------------------


async def test_levels_are_normalised(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Loggers' level names are mapped to ours, case- and space-insensitively; no level is info."""
    sent = ["WARNING", " Error ", "critical", "notice", "verbose", "TRACE", None]
    body = [
        {"message": str(i), **({} if level is None else {"level": level})} for i, level in enumerate(sent)
    ]
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    assert response.status_code == 202, response.text
    levels = [r["level"] for r in reversed(await listed(client, tenant))]
    assert levels == ["warn", "error", "fatal", "info", "debug", "trace", "info"]


async def test_unknown_level_is_400_naming_the_record(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A level we cannot map is a validation error naming the record's index and field."""
    body = [{"message": "a"}, {"message": "b", "level": "warn"}, {"message": "c", "level": "loud"}]
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[2].level" in str(error["message"])
    assert "loud" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("2024-03-01T12:00:00+02:00", "2024-03-01T10:00:00.000Z"),
        ("2024-03-01T12:00:00Z", "2024-03-01T12:00:00.000Z"),
        ("2024-03-01T12:00:00", "2024-03-01T12:00:00.000Z"),  # no zone: UTC
        (1_700_000_000, "2023-11-14T22:13:20.000Z"),  # Unix seconds
        (1_700_000_000.5, "2023-11-14T22:13:20.500Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),  # too large for seconds: milliseconds
    ],
)
async def test_timestamps_as_iso_or_unix_time(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant, sent: object, stored: str
) -> None:
    """A record's timestamp may be ISO 8601 (any zone, or none for UTC) or Unix time; it is kept in UTC."""
    response = await intake.post("/v1/logs", json={"message": "t", "timestamp": sent}, headers=tenant.public)
    assert response.status_code == 202, response.text
    [record] = await listed(client, tenant)
    assert record["timestamp"] == stored


async def test_default_timestamp_is_time_of_receipt(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Without a timestamp a record is timed when the intake received it: its receivedAt, the moment
    its request's group was committed (log record, event, or OTLP record without either time)."""
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    sent = [
        await intake.post("/v1/logs", json={"message": "now"}, headers=tenant.public),
        await intake.post("/v1/events", json={"name": "now"}, headers=tenant.public),
        await intake.post(
            "/v1/logs", json=otlp_json({"body": {"stringValue": "now"}}), headers=tenant.public
        ),
    ]
    after = datetime.now(UTC) + timedelta(milliseconds=1)
    assert [response.status_code for response in sent] == [202, 202, 200]
    records = await listed(client, tenant)
    assert len(records) == 3
    for record in records:
        assert record["timestamp"] == record["receivedAt"]
        assert before <= parse_time(record["timestamp"]) <= after


@pytest.mark.parametrize("sent", ["2024-13-01T00:00:00Z", "yesterday", True, "0001-01-01T00:00:00+14:00"])
async def test_bad_timestamp_is_400(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, sent: object
) -> None:
    """An impossible date, free text, a boolean, or a time outside the representable range once in UTC is a
    400 naming the field (the last was a 500 from an OverflowError)."""
    response = await intake.post(
        "/v1/logs", json=[{"message": "ok"}, {"message": "t", "timestamp": sent}], headers=tenant.public
    )
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[1].timestamp" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


# --- events ---------------------------------------------------------------------------------------------

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


# --- limits ---------------------------------------------------------------------------------------------


async def test_exactly_1000_records_are_accepted(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """1,000 records is the limit, not beyond it."""
    body = [{"message": str(i)} for i in range(1000)]
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    assert response.json() == {"accepted": 1000}
    assert await stored_count(services, tenant.org_id) == 1000


@pytest.mark.parametrize("form", ["array", "ndjson", "otlp-json", "otlp-protobuf"])
async def test_more_than_1000_records_is_413(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, form: str
) -> None:
    """1,001 records in any batch form is 413 PAYLOAD_TOO_LARGE and stores nothing."""
    records = [{"message": str(i)} for i in range(1001)]
    if form == "array":
        response = await intake.post("/v1/logs", json=records, headers=tenant.public)
    elif form == "ndjson":
        response = await intake.post(
            "/v1/logs", content=ndjson(*records), headers={**tenant.public, "content-type": NDJSON}
        )
    elif form == "otlp-json":
        body = otlp_json(*({"body": {"stringValue": r["message"]}} for r in records))
        response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    else:
        request = otlp_protobuf(*(LogRecord(body=AnyValue(string_value=r["message"])) for r in records))
        response = await intake.post(
            "/v1/logs", content=request.SerializeToString(), headers=protobuf_headers(tenant)
        )
    assert response.status_code == 413
    if form == "otlp-protobuf":
        message = rpc_status(response).message
    else:
        message = str(assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")["message"])
    assert "the limit is 1000" in message
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("path", ["/v1/logs", "/v1/events"])
async def test_huge_array_of_empty_records_is_413_at_once(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, path: str
) -> None:
    """An array stops validating past record 1,000: 300,000 ``{}`` (1 MB) is a short 413, not seconds
    of validation ending in a 400 listing 300,000 missing fields (what it was)."""
    body = b"[" + b"{}," * 300_000 + b"{}]"
    started = time.monotonic()
    response = await intake.post(path, content=body, headers={**tenant.public, "content-type": JSON})
    elapsed = time.monotonic() - started
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id=path[4:] + ".ingest")
    assert "the limit is 1000" in str(error["message"])
    assert len(response.content) < 1000
    assert elapsed < 2, f"took {elapsed:.2f} s"
    assert await stored_count(services, tenant.org_id) == 0


async def test_array_count_is_checked_before_its_records(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """1,001 records with a bad one among the first thousand is still 413 (as in NDJSON): the count is
    the first thing an array is held to."""
    body = [{"message": str(i)} for i in range(1001)]
    body[5] = {"level": "nope"}
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("form", ["object", "array", "ndjson", "otlp-protobuf"])
async def test_a_record_over_1_mib_is_413_naming_it(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, form: str
) -> None:
    """One record above 1 MiB refuses the request (naming the record) even though the body is under 5 MiB."""
    big = "x" * (MIB + 1)
    if form == "object":
        response, index = await intake.post("/v1/logs", json={"message": big}, headers=tenant.public), 0
    elif form == "array":
        body = [{"message": "small"}, {"message": big}]
        response, index = await intake.post("/v1/logs", json=body, headers=tenant.public), 1
    elif form == "ndjson":
        content = ndjson({"message": "small"}, {"message": "small"}, {"message": big})
        headers = {**tenant.public, "content-type": NDJSON}
        response, index = await intake.post("/v1/logs", content=content, headers=headers), 2
    else:
        request = otlp_protobuf(
            LogRecord(body=AnyValue(string_value="small")), LogRecord(body=AnyValue(string_value=big))
        )
        content = request.SerializeToString()
        response, index = await intake.post("/v1/logs", content=content, headers=protobuf_headers(tenant)), 1
    assert response.status_code == 413
    if form == "otlp-protobuf":
        message = rpc_status(response).message
    else:
        message = str(assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")["message"])
    assert f"Record [{index}]" in message
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("form", ["array", "otlp-protobuf"])
async def test_record_size_counts_utf8_bytes(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, form: str
) -> None:
    """The 1 MiB per record is measured in UTF-8 bytes in every form: two 600 KB records of CJK text are
    accepted (arrays once refused them, counting \\uXXXX escapes), a 1.2 MB one is refused (OTLP once
    accepted it, counting characters)."""
    fits = "漢" * 200_000  # 600,000 bytes in UTF-8
    too_big = "漢" * 400_000  # 1,200,000 bytes: 400,000 characters
    if form == "array":
        ok = await intake.post(
            "/v1/logs",
            content=json.dumps([{"message": fits}, {"message": fits}], ensure_ascii=False).encode(),
            headers={**tenant.public, "content-type": JSON},
        )
        refused = await intake.post(
            "/v1/logs",
            content=json.dumps([{"message": "a"}, {"message": too_big}], ensure_ascii=False).encode(),
            headers={**tenant.public, "content-type": JSON},
        )
    else:
        both = otlp_protobuf(*(LogRecord(body=AnyValue(string_value=fits)) for _ in range(2)))
        one = otlp_protobuf(
            LogRecord(body=AnyValue(string_value="a")), LogRecord(body=AnyValue(string_value=too_big))
        )
        ok = await intake.post("/v1/logs", content=both.SerializeToString(), headers=protobuf_headers(tenant))
        refused = await intake.post(
            "/v1/logs", content=one.SerializeToString(), headers=protobuf_headers(tenant)
        )
    assert ok.status_code in (200, 202), ok.content[:300]
    assert refused.status_code == 413
    assert await stored_count(services, tenant.org_id) == 2


async def test_body_over_5_mib_is_413_by_content_length(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A declared body above 5 MiB is refused from its Content-Length, before it is read."""
    body = b"[" + b" " * (5 * MIB) + b"]"
    response = await intake.post("/v1/logs", content=body, headers={**tenant.public, "content-type": JSON})
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")
    assert str(5 * MIB) in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


async def test_streamed_body_over_5_mib_is_413(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A body without Content-Length (chunked) is counted as it arrives and stopped at 5 MiB."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message":"'
        for _ in range(6):
            yield b"x" * MIB
        yield b'"}'

    response = await intake.post(
        "/v1/logs", content=chunks(), headers={**tenant.public, "content-type": JSON}
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("payload", ["zeros", "records"])
async def test_gzip_bomb_is_413_quickly(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, payload: str
) -> None:
    """20 MiB compressed to a few dozen KB is stopped at 5 MiB decompressed: 413, fast, nothing stored,
    even when the 20 MiB would be valid records."""
    if payload == "zeros":
        raw, content_type = bytes(20 * MIB), JSON
    else:
        line = b'{"message":"boom"}\n'
        raw, content_type = line * (20 * MIB // len(line)), NDJSON
    bomb = gz(raw)
    assert len(bomb) < 100_000
    started = time.monotonic()
    response = await intake.post(
        "/v1/logs",
        content=bomb,
        headers={**tenant.public, "content-type": content_type, "content-encoding": "gzip"},
    )
    elapsed = time.monotonic() - started
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")
    assert "decompressed" in str(error["message"])
    assert elapsed < 2, f"took {elapsed:.2f} s"
    assert await stored_count(services, tenant.org_id) == 0


async def test_concatenated_gzip_members_are_one_body(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Concatenated gzip members are valid gzip: they are inflated one after another into one body."""
    body = gz(ndjson({"message": "a"})) + gz(ndjson({"message": "b"}))
    headers = {**tenant.public, "content-type": NDJSON, "content-encoding": "gzip"}
    response = await intake.post("/v1/logs", content=body, headers=headers)
    assert response.json() == {"accepted": 2}
    assert [r["message"] for r in await listed(client, tenant)] == ["b", "a"]


@pytest.mark.parametrize(
    "body",
    [
        b'{"message":"not gzip"}',
        gz(b'{"message":"cut short"}')[:-6],
        gz(b'{"message":"x"}') + b"trailing junk",
    ],
    ids=["not-gzip", "truncated", "trailing-garbage"],
)
async def test_invalid_gzip_is_400(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, body: bytes
) -> None:
    """A body that does not inflate is 400 INVALID_ENCODING and nothing is stored."""
    headers = {**tenant.public, "content-type": JSON, "content-encoding": "gzip"}
    response = await intake.post("/v1/logs", content=body, headers=headers)
    assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="INVALID_ENCODING")
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("path", ["/v1/logs", "/v1/events"])
async def test_unknown_content_encoding_is_415(intake: httpx.AsyncClient, tenant: Tenant, path: str) -> None:
    """Only gzip (and identity) is inflated; br, deflate and the like are 415 UNSUPPORTED_ENCODING."""
    for encoding in ("br", "deflate"):
        response = await intake.post(
            path, content=b"{}", headers={**tenant.public, "content-type": JSON, "content-encoding": encoding}
        )
        error = assert_error(
            response,
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            operation_id=path[4:] + ".ingest",
            reason="UNSUPPORTED_ENCODING",
        )
        assert encoding in str(error["message"])


@pytest.mark.parametrize("path", ["/v1/logs", "/v1/events"])
async def test_unknown_content_type_is_415(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, path: str
) -> None:
    """Bodies other than JSON, NDJSON and (logs) protobuf are 415, naming the type; nothing is stored."""
    for content_type in ("text/plain", "application/xml", "multipart/form-data; boundary=x"):
        response = await intake.post(
            path,
            content=b'{"message":"x","name":"x"}',
            headers={**tenant.public, "content-type": content_type},
        )
        error = assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE", operation_id=path[4:] + ".ingest")
        assert content_type.split(";")[0] in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


async def test_content_type_parameters_and_case_are_ignored(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """``Application/JSON; charset=utf-8`` is JSON; a missing Content-Type is read as JSON too."""
    headers = {**tenant.public, "content-type": "Application/JSON; charset=utf-8"}
    assert (await intake.post("/v1/logs", content=b'{"message":"a"}', headers=headers)).status_code == 202
    bare = await intake.post("/v1/logs", content=b'{"message":"b"}', headers=tenant.public)
    assert bare.status_code == 202, bare.text
    assert [r["message"] for r in await listed(client, tenant)] == ["b", "a"]


# --- bad records: 400 naming the record, nothing stored ---------------------------------------------------


async def test_bad_record_is_400_naming_its_index(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A record with a wrong type names ``[index].field``; a missing field is listed in missingContext."""
    good = [{"message": str(i)} for i in range(3)]
    wrong_type = await intake.post("/v1/logs", json=[*good, {"message": 42}], headers=tenant.public)
    error = assert_error(
        wrong_type, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED"
    )
    assert "[3].message" in str(error["message"])
    missing = await intake.post("/v1/logs", json=[*good, {"level": "info"}], headers=tenant.public)
    error = assert_error(
        missing,
        400,
        "BAD_REQUEST",
        operation_id="logs.ingest",
        reason="VALIDATION_FAILED",
        missing=["[3].message"],
    )
    assert "[3].message" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"message": "x", "msg": "typo"}, "[0].msg: unknown field"),
        ({"message": "x", "traceId": "not-hex"}, "[0].traceId"),
        ({"message": "x", "spanId": "abc"}, "[0].spanId"),
        ({"message": "x", "attributes": ["not", "an", "object"]}, "[0].attributes"),
        ({"message": "x", "level": 3}, "[0].level"),
        ("just a string", "[0]"),
    ],
)
async def test_each_field_is_checked(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, record: object, field: str
) -> None:
    """Unknown fields, malformed ids, non-object attributes and wrong types are refused by name."""
    response = await intake.post("/v1/logs", json=record, headers=tenant.public)
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert field in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (JSON, b'{"message": "unterminated'),
        (JSON, b""),
        (JSON, b'[{"message": "a"},]'),
        (JSON, b'{"resourceLogs": [}'),
        (NDJSON, b'{"message": "a"}\n{"message": \n'),
        (JSON, b'{"resourceLogs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ],
    ids=["object", "empty", "array", "otlp-json", "ndjson", "otlp-json-too-deep"],
)
async def test_invalid_json_is_400(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, content_type: str, body: bytes
) -> None:
    """Bodies that are not JSON are 400 INVALID_JSON in every JSON form (nesting too deep for the parser
    included: it was a 500 from a RecursionError)."""
    response = await intake.post(
        "/v1/logs", content=body, headers={**tenant.public, "content-type": content_type}
    )
    assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="INVALID_JSON")
    assert await stored_count(services, tenant.org_id) == 0


async def test_ndjson_error_names_the_line(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """In NDJSON the index is the record's (non-blank line's) position."""
    body = ndjson({"message": "a"}, {"message": "b"}, {"message": "c", "level": "nope"})
    response = await intake.post("/v1/logs", content=body, headers={**tenant.public, "content-type": NDJSON})
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[2].level" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("form", ["array", "ndjson", "otlp-json", "otlp-protobuf", "gzip-array"])
async def test_batch_is_all_or_nothing(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, services: Services, tenant: Tenant, form: str
) -> None:
    """One bad record in a batch refuses the whole batch: the table holds what it held before."""
    seeded = await intake.post("/v1/logs", json={"message": "before"}, headers=tenant.public)
    assert seeded.status_code == 202
    before = await stored_count(services, tenant.org_id)
    records: list[dict[str, Any]] = [{"message": str(i)} for i in range(5)]
    records[3] = {"message": "bad", "level": "loud"}
    if form in ("array", "gzip-array"):
        content, headers = json.dumps(records).encode(), {"content-type": JSON}
        if form == "gzip-array":
            content, headers = gz(content), {**headers, "content-encoding": "gzip"}
    elif form == "ndjson":
        content, headers = ndjson(*records), {"content-type": NDJSON}
    elif form == "otlp-json":
        bodies: list[dict[str, Any]] = [{"body": {"stringValue": str(i)}} for i in range(5)]
        bodies[3]["traceId"] = "abcd"  # 2 bytes, not 16
        content, headers = json.dumps(otlp_json(*bodies)).encode(), {"content-type": JSON}
    else:
        protos = [LogRecord(body=AnyValue(string_value=str(i))) for i in range(5)]
        protos[3].span_id = b"\x01\x02"
        content, headers = otlp_protobuf(*protos).SerializeToString(), {"content-type": PROTOBUF}
    response = await intake.post("/v1/logs", content=content, headers={**tenant.public, **headers})
    assert response.status_code == 400
    message = rpc_status(response).message if form == "otlp-protobuf" else response.json()["message"]
    assert "[3]" in message
    assert await stored_count(services, tenant.org_id) == before == 1
    assert [r["message"] for r in await listed(client, tenant)] == ["before"]


@pytest.mark.parametrize(
    ("path", "content_type", "body", "field"),
    [
        ("/v1/logs", JSON, b'[{"message":"ok"},{"message":"a\\u0000b"}]', "[1].message"),
        ("/v1/logs", JSON, b'{"message":"x","attributes":{"k\\u0000":"v"}}', "[0].attributes"),
        (
            "/v1/logs",
            NDJSON,
            b'{"message":"ok"}\n{"message":"x","attributes":{"a":["\\u0000"]}}\n',
            "[1].attributes",
        ),
        ("/v1/events", JSON, b'{"name":"x","properties":{"p":"\\u0000"}}', "[0].properties"),
        ("/v1/events", JSON, b'{"name":"x","distinctId":"u\\u0000"}', "[0].distinctId"),
        ("/v1/logs", PROTOBUF, None, "[1].body"),
    ],
    ids=[
        "log-message",
        "log-attribute-key",
        "ndjson-attribute",
        "event-properties",
        "event-distinct-id",
        "otlp",
    ],
)
async def test_nul_characters_are_refused(
    intake: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    path: str,
    content_type: str,
    body: bytes | None,
    field: str,
) -> None:
    """PostgreSQL stores NUL in neither text nor jsonb: a record holding one is a 400 naming it, on both
    backends (on PostgreSQL it was a 500 for the whole group commit)."""
    if body is None:
        request = otlp_protobuf(
            LogRecord(body=AnyValue(string_value="ok")), LogRecord(body=AnyValue(string_value="a\x00b"))
        )
        body = request.SerializeToString()
    response = await intake.post(path, content=body, headers={**tenant.public, "content-type": content_type})
    assert response.status_code == 400
    if content_type == PROTOBUF:
        assert field in rpc_status(response).message
    else:
        error = assert_error(
            response, 400, "BAD_REQUEST", operation_id=path[4:] + ".ingest", reason="VALIDATION_FAILED"
        )
        assert field in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


async def test_escaped_backslash_u0000_is_ordinary_text(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The six characters ``\\u0000`` (an escaped backslash, then u0000) are text, not a NUL."""
    response = await intake.post("/v1/logs", content=b'{"message":"\\\\u0000"}', headers=tenant.public)
    assert response.status_code == 202, response.text
    [record] = await listed(client, tenant)
    assert record["message"] == "\\u0000"


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (otlp_json({"traceId": "zz"}), "INVALID_OTLP"),
        ({"resourceLogs": "nope"}, "INVALID_OTLP"),
        ({"resourceLogs": [{"scopeLogs": "nope"}]}, "INVALID_OTLP"),
        (otlp_json({"timeUnixNano": "soon"}), "INVALID_OTLP"),
        (otlp_json({"body": {"stringValue": 5}}), "INVALID_OTLP"),
        (otlp_json({"traceId": "00112233445566778899aabbccddee"}), "VALIDATION_FAILED"),  # 15 bytes
        (otlp_json({"spanId": "0011223344556677ff"}), "VALIDATION_FAILED"),  # 9 bytes
    ],
    ids=[
        "trace-id-not-hex",
        "resource-logs-not-a-list",
        "scope-logs-not-a-list",
        "time-not-a-number",
        "body-wrong-type",
        "trace-id-15-bytes",
        "span-id-9-bytes",
    ],
)
async def test_malformed_otlp_json_is_400(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, document: dict[str, Any], reason: str
) -> None:
    """An OTLP JSON export that protobuf cannot read, or with ids of the wrong length, is a 400."""
    response = await intake.post("/v1/logs", json=document, headers=tenant.public)
    assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason=reason)
    assert await stored_count(services, tenant.org_id) == 0


# --- OTLP protobuf errors -------------------------------------------------------------------------------


async def test_protobuf_request_with_bad_key_is_401_protobuf_status(intake: httpx.AsyncClient) -> None:
    """OTLP/HTTP wants errors to a protobuf request as a protobuf google.rpc.Status, with the HTTP status."""
    request = otlp_protobuf(LogRecord(body=AnyValue(string_value="x"))).SerializeToString()
    for headers in ({"x-service-key": generate_key("public")}, {}):
        response = await intake.post(
            "/v1/logs", content=request, headers={**headers, "content-type": PROTOBUF}
        )
        assert response.status_code == 401
        status = rpc_status(response)
        assert status.code == 16  # UNAUTHENTICATED
        assert status.message
        assert response.headers["x-request-id"]
        assert "x-ratelimit-limit" in response.headers


async def test_protobuf_garbage_is_400_protobuf_status(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A body that is not an ExportLogsServiceRequest is a 400, still answered in protobuf."""
    response = await intake.post("/v1/logs", content=b"\xff\xff\xff\xff", headers=protobuf_headers(tenant))
    assert response.status_code == 400
    status = rpc_status(response)
    assert status.code == 3  # INVALID_ARGUMENT
    assert "ExportLogsServiceRequest" in status.message
    assert await stored_count(services, tenant.org_id) == 0


async def test_protobuf_over_5_mib_is_413_protobuf_status(intake: httpx.AsyncClient, tenant: Tenant) -> None:
    """The size limit, checked before authentication, answers a protobuf request in protobuf too."""
    response = await intake.post("/v1/logs", content=bytes(5 * MIB + 1), headers=protobuf_headers(tenant))
    assert response.status_code == 413
    assert str(5 * MIB) in rpc_status(response).message


# --- CORS -----------------------------------------------------------------------------------------------


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


# --- rate limits ----------------------------------------------------------------------------------------


async def test_intake_answers_429_past_the_organization_limit(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """Past the organization's per-minute budget the intake answers 429 with Retry-After and the rate-limit
    headers, to JSON and protobuf requests alike, and stores nothing more."""
    async with services.db.transaction() as conn:
        await set_rate_limit(conn, services.signals, tenant.org_id, 2)
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
        await set_rate_limit(conn, services.signals, tenant.org_id, 1)
    assert (await intake.post("/v1/logs", json={"message": "x"}, headers=tenant.public)).status_code == 202
    assert (await intake.post("/v1/logs", json={"message": "x"}, headers=tenant.public)).status_code == 429
    assert (await client.get("/v1/logs", headers=tenant.secret)).status_code == 200


# --- tenancy --------------------------------------------------------------------------------------------


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


# --- hardening found in review -----------------------------------------------------------------------------


async def test_many_gzip_members_are_refused_quickly(intake: httpx.AsyncClient, tenant: Tenant) -> None:
    """Each member would copy the rest of the body: thousands of tiny members are a 400, not seconds of
    work on the event loop."""
    member = gz(b" ")
    started = time.monotonic()
    response = await intake.post(
        "/v1/logs",
        content=member * 50_000,
        headers={**tenant.public, "content-type": JSON, "content-encoding": "gzip"},
    )
    assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="INVALID_ENCODING")
    assert time.monotonic() - started < 1


async def test_otlp_attributes_copied_into_every_record_count_against_the_limit(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """100 KB of resource attributes times 1,000 records would store 100 MB from a 100 KB body."""
    export = otlp_protobuf(*(LogRecord(body=AnyValue(string_value="x")) for _ in range(1000)))
    export.resource_logs[0].resource.attributes.append(kv("blob", string_value="b" * 100_000))
    response = await intake.post(
        "/v1/logs", content=export.SerializeToString(), headers=protobuf_headers(tenant)
    )
    assert response.status_code == 413
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_non_finite_numbers_are_400_naming_the_record(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, number: str
) -> None:
    """JSON has no NaN or Infinity (PostgreSQL's jsonb refuses them): refused on both backends alike."""
    body = f'[{{"message": "ok"}}, {{"message": "bad", "attributes": {{"x": [{number}]}}}}]'
    response = await intake.post("/v1/logs", content=body, headers={**tenant.public, "content-type": JSON})
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[1].attributes" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


async def test_otlp_non_finite_double_is_400(intake: httpx.AsyncClient, tenant: Tenant) -> None:
    export = otlp_protobuf(
        LogRecord(body=AnyValue(string_value="x"), attributes=[kv("x", double_value=math.nan)])
    )
    response = await intake.post(
        "/v1/logs", content=export.SerializeToString(), headers=protobuf_headers(tenant)
    )
    assert response.status_code == 400
    assert rpc_status(response).code == 3


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
