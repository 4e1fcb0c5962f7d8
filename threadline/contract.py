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
    for path, item in schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for operation in item.values():
            for status, response in operation.get("responses", {}).items():
                headers = response.setdefault("headers", {})
                for name, description in _HEADERS.items():
                    headers[name] = {
                        "description": description,
                        "schema": {"type": "integer" if "Rate" in name else "string"},
                    }
                if status == "429":
                    headers["Retry-After"] = {
                        "description": "Seconds to wait.",
                        "schema": {"type": "integer"},
                    }


def build_contract(api: FastAPI, intake: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=TITLE, version=__version__, description=DESCRIPTION, routes=api.routes)
    schema["servers"] = [API_SERVER]
    intake_schema = get_openapi(title=TITLE, version=__version__, routes=intake.routes)
    for path, item in intake_schema["paths"].items():
        for method, operation in item.items():
            operation["servers"] = [INTAKE_SERVER]
            schema["paths"].setdefault(path, {})[method] = operation
    for section, entries in intake_schema.get("components", {}).items():
        schema.setdefault("components", {}).setdefault(section, {}).update(entries)
    _document_headers(schema)
    return schema


def render(contract: dict[str, Any]) -> str:
    return json.dumps(contract, indent=2, ensure_ascii=False) + "\n"
