"""Bodies, headers and read-backs shared by the intake's tests (``test_intake_*.py``)."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from typing import Any

import httpx
import sqlalchemy as sa
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from tests.support import Tenant
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
