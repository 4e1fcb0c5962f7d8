"""The intake's body formats end to end, plain and gzip: a JSON object, an array, NDJSON, OTLP JSON and
OTLP protobuf, each read back through ``GET /v1/logs``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    KeyValueList,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, SeverityNumber

from tests.support import Tenant, listed
from tests.telemetry.intake_helpers import (
    JSON,
    NDJSON,
    PROTOBUF,
    SPAN,
    TRACE,
    gz,
    kv,
    ndjson,
    otlp_json,
    otlp_protobuf,
    parse_time,
    protobuf_headers,
)


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
