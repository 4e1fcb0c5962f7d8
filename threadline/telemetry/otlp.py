"""OpenTelemetry (OTLP/HTTP logs) to rows: an ``ExportLogsServiceRequest`` in protobuf or in OTLP's JSON."""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from threadline.kit.errors import BadRequest, PayloadTooLarge, Reason
from threadline.telemetry.records import (
    MAX_BODY_BYTES,
    Row,
    Source,
    check_count,
    check_record_size,
    has_nul,
    json_text,
    nul_refused,
)
from threadline.telemetry.schemas import Level, normalize_level


def parse_otlp_protobuf(body: bytes) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise BadRequest(
            f"The body is not an OTLP ExportLogsServiceRequest: {exc}.", reason=Reason.INVALID_OTLP
        ) from exc
    return request


def parse_otlp_json(document: Any) -> ExportLogsServiceRequest:
    """OTLP's JSON encoding writes trace and span ids as hex, where protobuf's JSON mapping expects
    base64: convert them, then let protobuf read the rest (camelCase names, enums as numbers, int64 as
    strings). The shape is checked on the way, so a refusal names the place in the body rather than a
    Python error."""
    if not isinstance(document, dict):
        raise _not_otlp("the body must be a JSON object with resourceLogs")
    for r, resource_logs in enumerate(_objects(document.get("resourceLogs"), "resourceLogs")):
        where = f"resourceLogs[{r}]"
        for s, scope_logs in enumerate(_objects(resource_logs.get("scopeLogs"), f"{where}.scopeLogs")):
            records = f"{where}.scopeLogs[{s}].logRecords"
            for i, record in enumerate(_objects(scope_logs.get("logRecords"), records)):
                for field in ("traceId", "spanId"):
                    value = record.get(field)
                    if not value:
                        continue
                    try:
                        record[field] = base64.b64encode(bytes.fromhex(value)).decode()
                    except (TypeError, ValueError):
                        raise _not_otlp(f"{records}[{i}].{field} must be a hex string") from None
    request = ExportLogsServiceRequest()
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:  # protobuf's message names the field and what it expected
        raise _not_otlp(str(exc)) from exc
    except (AttributeError, TypeError, ValueError, binascii.Error):
        raise _not_otlp("a field has a value of the wrong type") from None
    return request


def _objects(value: Any, path: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _not_otlp(f"{path} must be an array of objects")
    return value


def _not_otlp(cause: str) -> BadRequest:
    return BadRequest(
        f"The body is not an OTLP ExportLogsServiceRequest: {cause}.", reason=Reason.INVALID_OTLP
    )


# OTLP severity numbers come in four-step bands: 1-4 TRACE, 5-8 DEBUG, ... 21-24 FATAL.
_SEVERITY_BANDS: tuple[Level, ...] = ("trace", "debug", "info", "warn", "error", "fatal")


def _otlp_level(number: int, text: str) -> Level:
    if 1 <= number <= 24:
        return _SEVERITY_BANDS[(number - 1) // 4]
    try:
        return normalize_level(text) if text else "info"
    except ValueError:
        return "info"


def _any_value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _key_values(value.kvlist_value.values)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if which == "double_value" and not math.isfinite(value.double_value):
        raise BadRequest(
            "OTLP double values must be finite (no NaN or Infinity).", reason=Reason.VALIDATION_FAILED
        )
    return getattr(value, which)


def _key_values(pairs: Iterable[KeyValue], prefix: str = "") -> dict[str, Any]:
    return {prefix + pair.key: _any_value(pair.value) for pair in pairs}


def otlp_rows(request: ExportLogsServiceRequest, source: Source) -> list[Row]:
    """Resource and scope attributes are flattened into each record's attributes as ``resource.<key>``
    and ``scope.<key>`` (plus ``scope.name`` and ``scope.version``); the record's own attributes win."""
    count = sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs)
    check_count(count)
    rows: list[Row] = []
    expanded = 0
    for resource_logs in request.resource_logs:
        resource = _key_values(resource_logs.resource.attributes, "resource.")
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope
            inherited = {**resource, **_key_values(scope.attributes, "scope.")}
            if scope.name:
                inherited["scope.name"] = scope.name
            if scope.version:
                inherited["scope.version"] = scope.version
            inherited_nul = has_nul(inherited)
            inherited_size = len(json_text(inherited).encode()) if inherited else 0
            for record in scope_logs.log_records:
                if len(record.trace_id) not in (0, 16) or len(record.span_id) not in (0, 8):
                    raise BadRequest(
                        f"Record [{len(rows)}]: traceId must be 16 bytes and spanId 8 bytes.",
                        reason=Reason.VALIDATION_FAILED,
                    )
                body_value = _any_value(record.body)
                message = body_value if isinstance(body_value, str) else json_text(body_value)
                attributes = _key_values(record.attributes)
                if has_nul(message):
                    raise nul_refused(len(rows), "body")
                if inherited_nul or has_nul(attributes):
                    raise nul_refused(len(rows), "attributes")
                # Sizes as stored: resource and scope attributes are copied into every record, so a small
                # body could otherwise expand far past the limits it was checked against.
                size = len(message.encode()) + inherited_size + len(json_text(attributes).encode())
                check_record_size(len(rows), size)
                expanded += size
                if expanded > MAX_BODY_BYTES:
                    raise PayloadTooLarge(
                        f"The records are larger than {MAX_BODY_BYTES} bytes once resource and scope "
                        "attributes are copied into each."
                    )
                nanos = record.time_unix_nano or record.observed_time_unix_nano
                row: Row = {
                    "organization_id": source.organization_id,
                    "project_id": source.project_id,
                    "kind": "log",
                    "level": _otlp_level(record.severity_number, record.severity_text),
                    "message": message,
                    "timestamp": _from_unix_nanos(nanos) if nanos else None,
                    "attributes": {**inherited, **attributes},
                    "trace_id": record.trace_id.hex() or None,
                    "span_id": record.span_id.hex() or None,
                    "name": None,
                    "properties": None,
                    "distinct_id": None,
                }
                rows.append(row)
    return rows


def _from_unix_nanos(nanos: int) -> datetime:
    """Exact to the microsecond: ``nanos / 1e9`` as a float rounds (…20.999999999 became …21.000000)."""
    seconds, rest = divmod(nanos, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
