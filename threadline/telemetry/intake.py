"""The intake's ingestion, served by ``threadline.intake_app`` on a port of its own.

    POST /v1/logs     log records (JSON, JSON array, NDJSON, OTLP/HTTP JSON or protobuf; gzip or not)
    POST /v1/events   product events (JSON, JSON array, NDJSON; gzip or not)

Both answer only after the records are committed (``telemetry.writer``). OTLP requests are answered as
OTLP/HTTP says: 200 with an ``ExportLogsServiceResponse`` in the request's encoding, and for a protobuf
request, errors as a protobuf ``google.rpc.Status`` (with the same status codes and headers).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import sqlalchemy as sa
from fastapi import APIRouter, Request
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from pydantic import TypeAdapter
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from threadline.access.principal import PRINCIPAL_SCOPE_KEY
from threadline.kit.context import header_of
from threadline.kit.errors import (
    UNKNOWN_OPERATION,
    ApiError,
    BadRequest,
    Forbidden,
    MethodNotAllowed,
    Reason,
    Unauthorized,
    render_envelope,
)
from threadline.kit.fastpath import never_routed
from threadline.kit.faults import dependency_of, unavailable
from threadline.kit.metrics import INTAKE_RECORDS_ACCEPTED, INTAKE_REFUSED
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.services import ServicesOf
from threadline.telemetry.cors import ALLOW, check_origin
from threadline.telemetry.decoding import decode, is_protobuf
from threadline.telemetry.records import Source
from threadline.telemetry.schemas import Accepted, EventIn, Kind, LogRecordIn
from threadline.telemetry.writer import LogWriter

router = APIRouter(prefix="/v1", tags=["intake"])

_JSON = b"application/json"
_PROTOBUF = b"application/x-protobuf"
_OTLP_PROTOBUF_OK = ExportLogsServiceResponse().SerializeToString()


def _body_schema(record: type[Any], with_otlp: bool) -> dict[str, Any]:
    one = TypeAdapter(record).json_schema()
    json_forms: list[dict[str, Any]] = [one, {"type": "array", "items": one, "maxItems": 1000}]
    content: dict[str, Any] = {
        "application/json": {"schema": {"oneOf": json_forms}},
        "application/x-ndjson": {"schema": {"type": "string", "description": "One JSON record per line."}},
    }
    if with_otlp:
        json_forms.append(
            {"type": "object", "required": ["resourceLogs"], "description": "OTLP/HTTP JSON logs."}
        )
        content["application/x-protobuf"] = {
            "schema": {"type": "string", "format": "binary", "description": "OTLP ExportLogsServiceRequest."}
        }
    return {"required": True, "content": content}


class IntakeServices(Protocol):
    """What ingestion reads from the process's services."""

    logs: LogWriter


class IngestEndpoints:
    """Serves ``POST /v1/logs`` and ``POST /v1/events`` as plain ASGI, behind the access middleware
    (authenticated, rate limited) and outside FastAPI (``assembly.assemble``'s ``served_before_routing``).

    The intake's cost per record is what its benchmark holds against a bare ASGI endpoint: FastAPI's
    request machinery (its middleware, routing, the endpoint wrapper, a Request and a Response object)
    measured more than the ingestion itself. The operations are still declared to FastAPI below, once,
    for the contract and for error bodies' operation ids."""

    def __init__(self, app: ASGIApp, *, runtime: ServicesOf[IntakeServices]) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = ROUTES.get(scope["path"]) if scope["type"] == "http" else None
        if kind is None:
            await self.app(scope, receive, send)
            return
        try:
            # The commit is awaited here rather than inside ``_ingest``: the request sleeps until its
            # group is committed, and every coroutine frame it sleeps in is paid again when it wakes.
            committed, records, (status, media_type, content) = await self._ingest(scope, receive, kind)
            try:
                await committed
            except sa.exc.IntegrityError as exc:
                # Only the foreign keys can fail: the key's project (and the key) was deleted a moment ago.
                raise Unauthorized("The key's project no longer exists.", reason=Reason.INVALID_KEY) from exc
            except sa.exc.DataError as exc:
                raise BadRequest(
                    "A value in these records cannot be stored.", reason=Reason.VALIDATION_FAILED
                ) from exc
            except Exception as exc:
                if (dependency := dependency_of(exc)) is None:
                    raise
                raise unavailable(exc, dependency) from exc
            INTAKE_RECORDS_ACCEPTED.inc(records)
        except ApiError as error:
            operation_id = _OPERATIONS[kind] if scope["method"] == "POST" else UNKNOWN_OPERATION
            await render_intake_error(scope, error, operation_id)(scope, receive, send)
            return
        headers = [(b"content-type", media_type), (b"content-length", b"%d" % len(content))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _ingest(
        self, scope: Scope, receive: Receive, kind: Kind
    ) -> tuple[asyncio.Future[None], int, tuple[int, bytes, bytes]]:
        """The records decoded and handed to the log writer: the future of their commit, how many they
        are, and the answer to send once it is done."""
        if scope["method"] != "POST":
            raise MethodNotAllowed(
                f"{scope['method']} is not allowed on {scope['path']}.", headers={"Allow": ALLOW.decode()}
            )
        principal = scope[PRINCIPAL_SCOPE_KEY]
        project_id = principal.key.project_id
        if project_id is None:  # pragma: no cover - public keys always belong to a project
            raise Forbidden("This key belongs to no project.")
        content_type = content_encoding = origin = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
            elif name == b"content-encoding":
                content_encoding = value
            elif name == b"origin" and origin is None:  # the first, as the CORS middleware reads it
                origin = value
        if origin is not None:
            check_origin(origin, principal)
        organization_id = principal.organization_id
        decoded = decode(
            kind,
            await _read_body(receive),
            content_type,
            content_encoding,
            Source(organization_id, project_id),
        )
        committed = self.runtime.services.logs.submit(organization_id, decoded.rows)
        records = len(decoded.rows)
        if decoded.format == "otlp-protobuf":
            return committed, records, (200, _PROTOBUF, _OTLP_PROTOBUF_OK)
        if decoded.format == "otlp-json":
            return committed, records, (200, _JSON, b"{}")
        return committed, records, (202, _JSON, b'{"accepted":%d}' % records)


async def _read_body(receive: Receive) -> bytes:
    """The whole body; its size was bounded by the access middleware (Content-Length or counted)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest("The client disconnected before sending the whole body.")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


ROUTES: dict[str, Kind] = {"/v1/logs": "log", "/v1/events": "event"}
_OPERATIONS: dict[Kind, str] = {"log": "logs.ingest", "event": "events.ingest"}


# OTLP/HTTP's ExportLogsServiceResponse in JSON. Every record is committed or none (a 4xx), so
# ``partialSuccess`` is never sent: the answer is ``{}``.
_OTLP_JSON_OK: dict[str, Any] = {
    "type": "object",
    "description": "`ExportLogsServiceResponse` (always `{}`: a request is stored whole or refused).",
    "properties": {
        "partialSuccess": {
            "type": "object",
            "properties": {"rejectedLogRecords": {"type": "string"}, "errorMessage": {"type": "string"}},
        }
    },
}
_OTLP_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "OTLP requests: all records committed; an `ExportLogsServiceResponse` in the "
        "request's encoding (`{}` in JSON).",
        "content": {
            "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": _OTLP_JSON_OK},
        },
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
async def ingest_logs(request: Request) -> None:
    """Log records with a project's public key (`x-service-key`): one record, an array (at most 1,000),
    NDJSON, or OpenTelemetry OTLP/HTTP logs (JSON or protobuf); `Content-Encoding: gzip` accepted. At most
    5 MiB per request after decompression and 1 MiB per record. All or nothing: a bad record is a 400
    naming its index and nothing is stored. The answer comes after the commit. Sent to the API's port
    instead, it is answered 421 `MISDIRECTED_REQUEST` (reason `USE_INTAKE`) naming the intake's address."""
    never_routed(request)


@router.post(
    "/events",
    operation_id="events.ingest",
    status_code=202,
    response_model=Accepted,
    responses=errors(400, 413, 415, 503, *AUTHENTICATED),
    openapi_extra={"requestBody": _body_schema(EventIn, with_otlp=False)},
)
async def ingest_events(request: Request) -> None:
    """Product events with a project's public key (`x-service-key`); the same formats (but OTLP),
    limits and guarantees as log records. Stored as telemetry of kind `event`. Sent to the API's port
    instead, it is answered 421 `MISDIRECTED_REQUEST` (reason `USE_INTAKE`) naming the intake's address."""
    never_routed(request)


# --- errors in OTLP's protobuf encoding -----------------------------------------------------------------

# google.rpc.Code for our statuses (what an OTLP client logs; the HTTP status is what it acts on).
_RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 405: 12, 413: 3, 415: 3, 429: 8, 503: 14}


def render_intake_error(scope: Scope, error: ApiError, operation_id: str) -> Response:
    """Our envelope, except to an OTLP protobuf request: a ``google.rpc.Status`` in protobuf, as
    OTLP/HTTP requires, with the same status and headers. Every refusal of the intake passes here, so
    it is counted here, by reason."""
    INTAKE_REFUSED.labels(error.reason or error.code).inc()
    if not is_protobuf(header_of(scope, b"content-type")):
        return render_envelope(scope, error, operation_id)
    status = _rpc_status(_RPC_CODES.get(error.status, 13), error.message)
    return Response(
        status, status_code=error.status, headers=error.headers, media_type="application/x-protobuf"
    )


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
