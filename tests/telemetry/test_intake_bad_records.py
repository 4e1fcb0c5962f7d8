"""Bad records: a 400 naming the record, nothing of the batch stored; and the ``google.rpc.Status`` bodies
OTLP protobuf clients are answered with."""

from __future__ import annotations

import asyncio
import json
import math
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
    MIB,
    NDJSON,
    PROTOBUF,
    gz,
    kv,
    ndjson,
    otlp_json,
    otlp_protobuf,
    protobuf_headers,
    rpc_status,
    stored_count,
)
from threadline.keys.tokens import generate_key
from threadline.runtime import Services


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


_FIRST_RECORD = "resourceLogs[0].scopeLogs[0].logRecords[0]"


@pytest.mark.parametrize(
    ("document", "cause"),
    [
        ({"resourceLogs": "nope"}, "resourceLogs must be an array of objects"),
        ({"resourceLogs": [{"scopeLogs": [1]}]}, "resourceLogs[0].scopeLogs must be an array of objects"),
        (
            {"resourceLogs": [{"scopeLogs": [{"logRecords": {"a": 1}}]}]},
            "resourceLogs[0].scopeLogs[0].logRecords must be an array of objects",
        ),
        (
            otlp_json({"traceId": "zz"}),
            "resourceLogs[0].scopeLogs[0].logRecords[0].traceId must be a hex string",
        ),
        (otlp_json({"spanId": 7}), "resourceLogs[0].scopeLogs[0].logRecords[0].spanId must be a hex string"),
    ],
)
async def test_malformed_otlp_json_names_the_place_not_a_python_error(
    intake: httpx.AsyncClient, tenant: Tenant, document: dict[str, Any], cause: str
) -> None:
    response = await intake.post("/v1/logs", json=document, headers=tenant.public)
    assert response.status_code == 400 and response.json()["reason"] == "INVALID_OTLP"
    assert response.json()["message"] == f"The body is not an OTLP ExportLogsServiceRequest: {cause}."


@pytest.mark.parametrize(
    "number",
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "1e400",
        "1" + "0" * 400 + ".0",  # past 1.8e308 with no exponent: read as Infinity, stored as null
        "-" + "9" * 309,  # an integer no double can hold
    ],
)
async def test_non_finite_numbers_are_400_naming_the_record(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, number: str
) -> None:
    """JSON has no NaN or Infinity (PostgreSQL's jsonb refuses them), and a number past the largest double
    would be read back as null: refused on both backends alike."""
    body = f'[{{"message": "ok"}}, {{"message": "bad", "attributes": {{"x": [{number}]}}}}]'
    response = await intake.post("/v1/logs", content=body, headers={**tenant.public, "content-type": JSON})
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[1].attributes" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


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


async def test_otlp_non_finite_double_is_400(intake: httpx.AsyncClient, tenant: Tenant) -> None:
    export = otlp_protobuf(
        LogRecord(body=AnyValue(string_value="x"), attributes=[kv("x", double_value=math.nan)])
    )
    response = await intake.post(
        "/v1/logs", content=export.SerializeToString(), headers=protobuf_headers(tenant)
    )
    assert response.status_code == 400
    assert rpc_status(response).code == 3


@pytest.mark.parametrize(
    "number", ["9" * 308, "1.7976931348623157e308", "0." + "0" * 400 + "1", "0." + "0" * 400 + "1e400"]
)
async def test_large_finite_numbers_are_kept(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant, number: str
) -> None:
    """Long digit runs that are finite doubles are ordinary numbers, not refused by the closer look."""
    body = f'{{"message": "big", "attributes": {{"x": {number}}}}}'
    response = await intake.post("/v1/logs", content=body, headers={**tenant.public, "content-type": JSON})
    assert response.status_code == 202, response.text
    [record] = await listed(client, tenant)
    # PostgreSQL's jsonb writes numbers without exponents (1.79e308 comes back as 309 digits): same value.
    assert float(record["attributes"]["x"]) == float(json.loads(number))


@pytest.mark.distributed
async def test_a_bad_number_never_fails_the_group_it_arrives_with(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """On PostgreSQL requests arriving together share one transaction: a number jsonb cannot store must be
    refused before its request joins the group, or it would fail every other request's records with it."""
    headers = {**tenant.public, "content-type": JSON}
    bad = '{"message": "bad", "attributes": {"n": 1' + "0" * 400 + ".0}}"
    good = [intake.post("/v1/logs", content=f'{{"message": "good {i}"}}', headers=headers) for i in range(30)]
    refused = intake.post("/v1/logs", content=bad, headers=headers)
    answers = await asyncio.gather(*good[:15], refused, *good[15:])
    assert [a.status_code for a in answers].count(202) == 30
    assert answers[15].status_code == 400 and "[0].attributes" in answers[15].json()["message"]
    assert await stored_count(services, tenant.org_id) == 30
