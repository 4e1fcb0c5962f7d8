"""The intake's limits and encodings: records per batch, bytes per record and per body, gzip bombs, content
encodings and types; a request over a limit stores nothing."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable

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
    gz,
    kv,
    ndjson,
    otlp_json,
    otlp_protobuf,
    protobuf_headers,
    rpc_status,
    stored_count,
)
from threadline.runtime import Services


async def cpu_seconds(request: Awaitable[httpx.Response]) -> tuple[httpx.Response, float]:
    """The response and the CPU time this process spent until it came. The intake app runs in this
    process (over ASGI), so that is the server's own work on the request, which other work on the machine
    does not inflate as it does wall time (a loaded run of the gzip bomb took 5.1 s of it against 2)."""
    started = time.process_time()
    response = await request
    return response, time.process_time() - started


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
    response, spent = await cpu_seconds(
        intake.post(path, content=body, headers={**tenant.public, "content-type": JSON})
    )
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id=path[4:] + ".ingest")
    assert "the limit is 1000" in str(error["message"])
    assert len(response.content) < 1000
    assert spent < 2, f"took {spent:.2f} CPU-s"
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


@pytest.mark.parametrize("form", ["object", "array", "ndjson"])
@pytest.mark.parametrize(("escapes", "accepted"), [(174_760, True), (174_763, False)])
async def test_record_size_is_the_same_in_every_form(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, form: str, escapes: int, accepted: bool
) -> None:
    """A record is measured as sent, escapes included, in every form: just under 1 MiB of \\u00e9 escapes
    is accepted alone, in an array or as an NDJSON line, and just over it refused in all three (an array
    once re-encoded its records, counting 2 bytes per escape, and accepted what the others refused)."""
    record = '{"message":"' + "\\u00e9" * escapes + '"}'
    assert (len(record) <= MIB) is accepted
    content, content_type = {
        "object": (record, JSON),
        "array": (f'[{{"message":"small"}}, {record}]', JSON),
        "ndjson": ('{"message":"small"}\n' + record + "\n", NDJSON),
    }[form]
    response = await intake.post(
        "/v1/logs", content=content.encode(), headers={**tenant.public, "content-type": content_type}
    )
    if accepted:
        assert response.status_code == 202, response.text[:300]
        return
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")
    assert f"Record [{0 if form == 'object' else 1}]" in str(error["message"])
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
    even when the 20 MiB would be valid records: inflating and decoding them all costs seconds."""
    if payload == "zeros":
        raw, content_type = bytes(20 * MIB), JSON
    else:
        line = b'{"message":"boom"}\n'
        raw, content_type = line * (20 * MIB // len(line)), NDJSON
    bomb = gz(raw)
    assert len(bomb) < 100_000
    response, spent = await cpu_seconds(
        intake.post(
            "/v1/logs",
            content=bomb,
            headers={**tenant.public, "content-type": content_type, "content-encoding": "gzip"},
        )
    )
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="logs.ingest")
    assert "decompressed" in str(error["message"])
    assert spent < 2, f"took {spent:.2f} CPU-s"
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


async def test_many_gzip_members_are_refused_quickly(intake: httpx.AsyncClient, tenant: Tenant) -> None:
    """Each member would copy the rest of the body: thousands of tiny members are a 400, not seconds of
    work on the event loop."""
    member = gz(b" ")
    response, spent = await cpu_seconds(
        intake.post(
            "/v1/logs",
            content=member * 50_000,
            headers={**tenant.public, "content-type": JSON, "content-encoding": "gzip"},
        )
    )
    assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="INVALID_ENCODING")
    assert spent < 1, f"took {spent:.2f} CPU-s"


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
