"""The OpenAPI contract: generated from the code, committed as ``openapi.json``, served at
``/v1/openapi.json``. The intake's operations live in the same document with their own server."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from threadline import __version__

TITLE = "Threadline API"
DESCRIPTION = (
    "Versioned API (`{base_url}` = server + `/v1`, secret keys) and telemetry intake (`{intake_url}`, public "
    "keys). Errors share one envelope; every `/v1` response carries `X-Request-Id` and `X-RateLimit-*`."
)
API_SERVER = {"url": "http://127.0.0.1:8080", "description": "API (base_url is this plus /v1)"}
INTAKE_SERVER = {"url": "http://127.0.0.1:8081", "description": "Telemetry intake (intake_url)"}

_HEADERS = {
    "X-Request-Id": "Identifies this request in logs and error reports.",
    "X-RateLimit-Limit": "Requests allowed per minute in the tighter of the organization and key buckets.",
    "X-RateLimit-Remaining": "Whole requests left in that bucket.",
    "X-RateLimit-Reset": "Unix time (seconds) at which that bucket is full again.",
}


def _document_headers(schema: dict[str, Any]) -> None:
    """Every /v1 response carries the same headers: declared once, referenced everywhere."""
    components = schema.setdefault("components", {})
    components["headers"] = {
        name: {"description": description, "schema": {"type": "integer" if "Rate" in name else "string"}}
        for name, description in _HEADERS.items()
    }
    components["headers"]["Retry-After"] = {"description": "Seconds to wait.", "schema": {"type": "integer"}}
    for path, item in schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for operation in item.values():
            for status, response in operation.get("responses", {}).items():
                names = [*_HEADERS, "Retry-After"] if status == "429" else list(_HEADERS)
                response["headers"] = {n: {"$ref": f"#/components/headers/{n}"} for n in names}


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Makes a retry safe: kept 24 h per organization; the same key with the same request answers the "
        "first response again (`Idempotent-Replayed: true`); with another request, 409 "
        "`IDEMPOTENCY_KEY_REUSED`; while the first is in flight, 409 `IDEMPOTENCY_KEY_IN_USE`."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
}
_BAD_REQUEST = {
    "description": "Malformed request or failed validation (`BAD_REQUEST`).",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
}
_CONFLICT = {
    "description": "Conflicts with the current state (`CONFLICT`).",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
}


def _document_idempotency(schema: dict[str, Any], intake_paths: set[str]) -> None:
    """Every POST of the API takes an ``Idempotency-Key`` (``idempotency/middleware.py``, which serves it
    before routing, so FastAPI never sees the header): declared here, with the 400 (a malformed key) and the
    409 it may answer."""
    for path, item in schema["paths"].items():
        operation = item.get("post")
        if operation is None or path in intake_paths or not path.startswith("/v1/"):
            continue
        operation.setdefault("parameters", []).append(IDEMPOTENCY_KEY)
        operation["responses"].setdefault("400", dict(_BAD_REQUEST))
        operation["responses"].setdefault("409", dict(_CONFLICT))


SECURITY_SCHEMES = {
    "secretKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "`Authorization: Bearer sk_…` (secret key).",
    },
    "secretKeyHeader": {
        "type": "apiKey",
        "in": "header",
        "name": "x-service-secret-key",
        "description": "`x-service-secret-key: sk_…`, the key guide's alternative form.",
    },
    "publicKey": {
        "type": "apiKey",
        "in": "header",
        "name": "x-service-key",
        "description": "`x-service-key: pk_…`.",
    },
    "streamToken": {
        "type": "apiKey",
        "in": "query",
        "name": "token",
        "description": "`?token=st_…`, a stream token (`runs.createStreamToken`, "
        "`threads.createStreamToken`): accepted only by the stream it was made for, for browsers, whose "
        "EventSource cannot send headers.",
    },
}
# The only operations a credential in the URL may open (keys/stream_access.py).
_TOKEN_OPERATIONS = frozenset({"runs.stream", "threads.stream"})


def _document_security(schema: dict[str, Any], intake_paths: set[str]) -> None:
    """Authentication happens in middleware, before routing; the contract still says who may call what."""
    schema.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    for path, item in schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for operation in item.values():
            if "servers" in operation and path in intake_paths:
                operation["security"] = [{"publicKey": []}]
            else:
                operation["security"] = [{"secretKey": []}, {"secretKeyHeader": []}]
                if operation.get("operationId") in _TOKEN_OPERATIONS:
                    operation["security"].append({"streamToken": []})


def _drop_422(schema: dict[str, Any]) -> None:
    """Validation failures are 400 here (never FastAPI's 422): the contract says so."""
    for item in schema["paths"].values():
        for operation in item.values():
            operation.get("responses", {}).pop("422", None)
    schemas = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


def _streams_only(schema: dict[str, Any]) -> None:
    """A stream's 200 is ``text/event-stream`` only (FastAPI adds its default JSON entry beside it)."""
    for item in schema["paths"].values():
        for operation in item.values():
            content = operation.get("responses", {}).get("200", {}).get("content", {})
            if "text/event-stream" in content:
                content.pop("application/json", None)


def build_contract(api: FastAPI, intake: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=TITLE, version=__version__, description=DESCRIPTION, routes=api.routes)
    schema["servers"] = [API_SERVER]
    intake_schema = get_openapi(title=TITLE, version=__version__, routes=intake.routes)
    for path, item in intake_schema["paths"].items():
        if not path.startswith("/v1/"):
            continue  # the intake's own probes are the API's, documented once
        for method, operation in item.items():
            operation["servers"] = [INTAKE_SERVER]
            schema["paths"].setdefault(path, {})[method] = operation
    for section, entries in intake_schema.get("components", {}).items():
        schema.setdefault("components", {}).setdefault(section, {}).update(entries)
    _drop_422(schema)
    _streams_only(schema)
    _document_security(schema, set(intake_schema["paths"]))
    _document_idempotency(schema, set(intake_schema["paths"]))
    _document_headers(schema)
    return schema


def render(contract: dict[str, Any]) -> str:
    return json.dumps(contract, indent=2, ensure_ascii=False) + "\n"
