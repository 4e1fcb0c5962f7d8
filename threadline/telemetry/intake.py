"""The intake: a small ASGI app of its own, on its own port, so it scales apart from the API.

    POST /v1/logs     log records (JSON, JSON array, NDJSON, OTLP/HTTP JSON or protobuf; gzip or not)
    POST /v1/events   product events (JSON, JSON array, NDJSON; gzip or not)

Both answer only after the records are committed (``telemetry.writer``). OTLP requests are answered as
OTLP/HTTP says: 200 with an ``ExportLogsServiceResponse`` in the request's encoding, and for a protobuf
request, errors as a protobuf ``google.rpc.Status`` (with the same status codes and headers).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from pydantic import TypeAdapter
from starlette.responses import Response
from starlette.types import Scope

from threadline import health
from threadline.assembly import assemble, mount_routes
from threadline.config import Settings
from threadline.keys.auth import principal_of
from threadline.kit.clock import utcnow
from threadline.kit.errors import ApiError, Forbidden, ServiceUnavailable, render_envelope
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.runtime import BACKEND_ERRORS, Services
from threadline.telemetry.cors import CorsMiddleware, check_origin
from threadline.telemetry.decoding import MAX_BODY_BYTES, Source, decode, is_protobuf
from threadline.telemetry.schemas import Accepted, EventIn, Kind, LogRecordIn

router = APIRouter(prefix="/v1", tags=["intake"])

_JSON = "application/json"
_PROTOBUF = "application/x-protobuf"
_OTLP_PROTOBUF_OK = ExportLogsServiceResponse().SerializeToString()


def _body_schema(record: type[Any], with_otlp: bool) -> dict[str, Any]:
    one = TypeAdapter(record).json_schema()
    json_forms: list[dict[str, Any]] = [one, {"type": "array", "items": one, "maxItems": 1000}]
    content: dict[str, Any] = {
        _JSON: {"schema": {"oneOf": json_forms}},
        "application/x-ndjson": {"schema": {"type": "string", "description": "One JSON record per line."}},
    }
    if with_otlp:
        json_forms.append(
            {"type": "object", "required": ["resourceLogs"], "description": "OTLP/HTTP JSON logs."}
        )
        content[_PROTOBUF] = {
            "schema": {"type": "string", "format": "binary", "description": "OTLP ExportLogsServiceRequest."}
        }
    return {"required": True, "content": content}


async def _ingest(request: Request, kind: Kind) -> Response:
    principal = principal_of(request)
    scope = request.scope
    check_origin(scope, principal)
    project_id = principal.key.project_id
    if project_id is None:  # pragma: no cover - public keys always belong to a project
        raise Forbidden("This key belongs to no project.")
    headers = request.headers
    body = await request.body()
    decoded = decode(
        kind,
        body,
        _raw(headers.get("content-type")),
        _raw(headers.get("content-encoding")),
        Source(principal.organization_id, project_id, utcnow()),
    )
    services: Services = request.app.state.runtime.services
    try:
        await services.logs.write(decoded.rows)
    except BACKEND_ERRORS as exc:
        raise ServiceUnavailable(
            "Storage is unreachable; nothing was stored. Retry shortly.", reason="DEPENDENCY_DOWN"
        ) from exc
    if decoded.format == "otlp-protobuf":
        return Response(_OTLP_PROTOBUF_OK, media_type=_PROTOBUF)
    if decoded.format == "otlp-json":
        return Response(b"{}", media_type=_JSON)
    return Response(b'{"accepted":%d}' % len(decoded.rows), status_code=202, media_type=_JSON)


def _raw(value: str | None) -> bytes | None:
    return None if value is None else value.encode("latin-1")


_OTLP_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "OTLP requests: all records committed; an `ExportLogsServiceResponse` in the "
        "request's encoding (`{}` in JSON).",
        "content": {_PROTOBUF: {"schema": {"type": "string", "format": "binary"}}},
    },
    202: {"description": "All records committed."},
}


@router.post(
    "/logs",
    operation_id="logs.ingest",
    status_code=202,
    response_model=Accepted,
    responses={**_OTLP_RESPONSES, **errors(400, 413, 415, 503, *AUTHENTICATED)},
    openapi_extra={"requestBody": _body_schema(LogRecordIn, with_otlp=True)},
)
async def ingest_logs(request: Request) -> Response:
    """Log records with a project's public key (`x-service-key`): one record, an array (at most 1,000),
    NDJSON, or OpenTelemetry OTLP/HTTP logs (JSON or protobuf); `Content-Encoding: gzip` accepted. At most
    5 MiB per request after decompression and 1 MiB per record. All or nothing: a bad record is a 400
    naming its index and nothing is stored. The answer comes after the commit."""
    return await _ingest(request, "log")


@router.post(
    "/events",
    operation_id="events.ingest",
    status_code=202,
    response_model=Accepted,
    responses=errors(400, 413, 415, 503, *AUTHENTICATED),
    openapi_extra={"requestBody": _body_schema(EventIn, with_otlp=False)},
)
async def ingest_events(request: Request) -> Response:
    """Product events with a project's public key (`x-service-key`); the same formats (but OTLP),
    limits and guarantees as log records. Stored as telemetry of kind `event`."""
    return await _ingest(request, "event")


# --- errors in OTLP's protobuf encoding -----------------------------------------------------------------

# google.rpc.Code for our statuses (what an OTLP client logs; the HTTP status is what it acts on).
_RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 405: 12, 413: 3, 415: 3, 429: 8, 503: 14}


def render_intake_error(scope: Scope, error: ApiError, operation_id: str) -> Response:
    """Our envelope, except to an OTLP protobuf request: a ``google.rpc.Status`` in protobuf, as
    OTLP/HTTP requires, with the same status and headers."""
    content_type = next((v for n, v in scope["headers"] if n == b"content-type"), None)
    if not is_protobuf(content_type):
        return render_envelope(scope, error, operation_id)
    status = _rpc_status(_RPC_CODES.get(error.status, 13), error.message)
    return Response(status, status_code=error.status, headers=error.headers, media_type=_PROTOBUF)


def _rpc_status(code: int, message: str) -> bytes:
    """``google.rpc.Status{code, message}`` in protobuf wire format (fields 1: varint, 2: bytes)."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return render_intake_error(request.scope, exc, request.app.state.operations.operation_id(request.scope))


def create_intake_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    settings = settings or Settings()
    app = assemble(
        "Threadline intake",
        "intake",
        settings,
        services,
        body_limit=MAX_BODY_BYTES,
        render_error=render_intake_error,
        outer=[(CorsMiddleware, {"paths": frozenset({"/v1/logs", "/v1/events"})})],
    )
    app.add_exception_handler(ApiError, _api_error)
    mount_routes(app, router, health.router)
    return app
