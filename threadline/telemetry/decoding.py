"""From an intake request body to rows: content encoding, the four body formats, validation, limits.

A body is decoded whole before anything is written, so a bad record refuses the request (400 naming the
record's index) and a batch is never half-stored. Formats, by ``Content-Type``:

- ``application/json`` (or none): one record, an array of records, or an OTLP ``ExportLogsServiceRequest``
  in OTLP's JSON encoding (an object with ``resourceLogs``);
- ``application/x-ndjson``: one record per line;
- ``application/x-protobuf``: an OTLP ``ExportLogsServiceRequest`` (logs only).

``Content-Encoding: gzip`` is inflated incrementally and stopped at the decompressed limit, so a small
"gzip bomb" costs at most the limit in memory; at most 16 concatenated members are read, which bounds the
time too.

OTLP bodies are read in ``telemetry.otlp``; the row, the size limits and the refusals every format shares
are in ``telemetry.records``.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from pydantic import TypeAdapter, ValidationError

from threadline.kit.errors import ApiError, BadRequest, PayloadTooLarge, Reason
from threadline.kit.handlers import invalid_json, validation_failed
from threadline.telemetry.otlp import otlp_rows, parse_otlp_json, parse_otlp_protobuf
from threadline.telemetry.records import (
    MAX_BODY_BYTES,
    MAX_RECORD_BYTES,
    Row,
    Source,
    check_count,
    check_record_size,
    storable,
)
from threadline.telemetry.schemas import (
    EVENT,
    EVENTS,
    LOG_RECORD,
    LOG_RECORDS,
    MAX_RECORDS,
    EventIn,
    Kind,
    Level,
    LogRecordIn,
)

MAX_GZIP_MEMBERS = 16

BodyFormat = Literal["json", "ndjson", "otlp-json", "otlp-protobuf"]


class UnsupportedMediaType(ApiError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"


# Tuples rather than frozen dataclasses: one of each is made per request, and a frozen dataclass's
# ``__init__`` (an ``object.__setattr__`` per field) costs twice as much.
class Decoded(NamedTuple):
    format: BodyFormat
    rows: list[Row]


def media_type(content_type: bytes | None) -> bytes:
    return (content_type or b"application/json").split(b";", 1)[0].strip().lower()


def is_protobuf(content_type: bytes | None) -> bool:
    return media_type(content_type) in (b"application/x-protobuf", b"application/protobuf")


def decode(
    kind: Kind,
    body: bytes,
    content_type: bytes | None,
    content_encoding: bytes | None,
    source: Source,
) -> Decoded:
    body = inflate(body, content_encoding)
    media = media_type(content_type)
    if media in (b"application/x-protobuf", b"application/protobuf"):
        if kind != "log":
            raise UnsupportedMediaType("OTLP is a logs format: send events as JSON or NDJSON.")
        return Decoded("otlp-protobuf", otlp_rows(parse_otlp_protobuf(body), source))
    if media in (b"application/x-ndjson", b"application/ndjson", b"application/jsonl"):
        return Decoded("ndjson", storable(kind, _ndjson_rows(kind, body, source), body))
    if media != b"application/json":
        raise UnsupportedMediaType(
            f"Content-Type {media.decode('latin-1')!r} is not accepted: use application/json, "
            "application/x-ndjson or (logs) application/x-protobuf."
        )
    if kind == "log" and b'"resourceLogs"' in body:
        document = _loads(body)
        if isinstance(document, dict) and "resourceLogs" in document:
            return Decoded("otlp-json", otlp_rows(parse_otlp_json(document), source))
    return Decoded("json", storable(kind, _json_rows(kind, body, source), body))


def inflate(body: bytes, content_encoding: bytes | None) -> bytes:
    encoding = (content_encoding or b"identity").strip().lower()
    if encoding == b"identity":
        return body
    if encoding not in (b"gzip", b"x-gzip"):
        raise UnsupportedMediaType(
            f"Content-Encoding {encoding.decode('latin-1')!r} is not accepted: use gzip or none.",
            reason=Reason.UNSUPPORTED_ENCODING,
        )
    out = bytearray()
    data = body
    members = 0
    while data:
        # Each further member copies the rest of the body (zlib's unused_data): without a bound, a body
        # of many tiny members costs time quadratic in its size.
        members += 1
        if members > MAX_GZIP_MEMBERS:
            raise BadRequest(
                f"The gzip body has more than {MAX_GZIP_MEMBERS} members.", reason=Reason.INVALID_ENCODING
            )
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while data:
                out += inflater.decompress(data, MAX_BODY_BYTES + 1 - len(out))
                if len(out) > MAX_BODY_BYTES:
                    raise PayloadTooLarge(_too_large_decompressed())
                data = inflater.unconsumed_tail
            out += inflater.flush()
        except zlib.error as exc:
            raise BadRequest(f"The body is not valid gzip: {exc}.", reason=Reason.INVALID_ENCODING) from exc
        if not inflater.eof:
            raise BadRequest("The gzip body is truncated.", reason=Reason.INVALID_ENCODING)
        data = inflater.unused_data  # a further gzip member (concatenated streams are valid gzip)
    if len(out) > MAX_BODY_BYTES:
        raise PayloadTooLarge(_too_large_decompressed())
    return bytes(out)


def _too_large_decompressed() -> str:
    return f"The body is larger than {MAX_BODY_BYTES} bytes once decompressed."


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise invalid_json(str(exc)) from exc


def _validate(adapter: TypeAdapter[Any], data: bytes, locate: Callable[[tuple[Any, ...]], str]) -> Any:
    try:
        return adapter.validate_json(data)
    except ValidationError as exc:
        problems = exc.errors(include_url=False)
        invalid = next((p for p in problems if p["type"] == "json_invalid"), None)
        if invalid is not None:
            raise invalid_json(str(invalid.get("ctx", {}).get("error", "invalid JSON"))) from exc
        if any(p["type"] == "too_long" and not p["loc"] for p in problems):  # an array past MAX_RECORDS
            raise PayloadTooLarge(
                f"More than {MAX_RECORDS} records in one request; the limit is {MAX_RECORDS}."
            ) from exc
        raise validation_failed(problems, locate) from exc


def _json_rows(kind: Kind, body: bytes, source: Source) -> list[Row]:
    stripped = body.lstrip()
    if stripped.startswith(b"["):
        records = _validate(LOG_RECORDS if kind == "log" else EVENTS, body, lambda loc: _at(loc[0], loc[1:]))
        check_count(len(records))
        if len(body) > MAX_RECORD_BYTES:  # else no element can be over the limit
            for index, size in enumerate(_element_sizes(body)):
                check_record_size(index, size)
    else:
        records = [_validate(LOG_RECORD if kind == "log" else EVENT, body, lambda loc: _at(0, loc))]
        check_record_size(0, len(body))
    build = _log_row if kind == "log" else _event_row
    return [build(record, source) for record in records]


_DECODER = json.JSONDecoder()
_BLANK = " \t\n\r"


def _element_sizes(body: bytes) -> list[int]:
    """The bytes of each record of a (valid) JSON array as sent: a record measures the same in an array
    as alone or as an NDJSON line, whatever escapes its sender used. Only arrays over the per-record limit
    are measured, so the second parse is paid by large bodies alone."""
    text = body.decode()
    sizes: list[int] = []
    position = _skip_blank(text, _skip_blank(text, 0) + 1)  # past "["
    while text[position] != "]":
        _value, end = _DECODER.raw_decode(text, position)
        piece = text[position:end]
        sizes.append(len(piece) if piece.isascii() else len(piece.encode()))
        position = _skip_blank(text, end)
        if text[position] == ",":
            position = _skip_blank(text, position + 1)
    return sizes


def _skip_blank(text: str, position: int) -> int:
    while text[position] in _BLANK:
        position += 1
    return position


def _ndjson_rows(kind: Kind, body: bytes, source: Source) -> list[Row]:
    adapter = LOG_RECORD if kind == "log" else EVENT
    build = _log_row if kind == "log" else _event_row
    lines = [line for line in body.split(b"\n") if line.strip()]
    check_count(len(lines))
    rows = []
    for index, line in enumerate(lines):
        check_record_size(index, len(line))
        rows.append(build(_validate(adapter, line, functools.partial(_at, index)), source))
    return rows


def _at(index: object, loc: Sequence[Any]) -> str:
    return f"[{index}]" + "".join(f".{part}" for part in loc)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _log_row(record: LogRecordIn, source: Source) -> Row:
    timestamp = record.get("timestamp")
    trace_id = record.get("traceId")
    span_id = record.get("spanId")
    level: Level = record.get("level", "info")  # type: ignore[assignment]  # normalised by LevelIn
    return {
        "organization_id": source.organization_id,
        "project_id": source.project_id,
        "kind": "log",
        "level": level,
        "message": record["message"],
        "timestamp": None if timestamp is None else _utc(timestamp),
        "attributes": record.get("attributes", {}),
        "trace_id": None if trace_id is None else trace_id.lower(),
        "span_id": None if span_id is None else span_id.lower(),
        "name": None,
        "properties": None,
        "distinct_id": None,
    }


def _event_row(record: EventIn, source: Source) -> Row:
    timestamp = record.get("timestamp")
    return {
        "organization_id": source.organization_id,
        "project_id": source.project_id,
        "kind": "event",
        "level": "info",
        "message": record["name"],
        "timestamp": None if timestamp is None else _utc(timestamp),
        "attributes": {},
        "trace_id": None,
        "span_id": None,
        "name": record["name"],
        "properties": record.get("properties", {}),
        "distinct_id": record.get("distinctId"),
    }
