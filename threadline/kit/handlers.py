"""The exception handlers: everything the framework or a handler raises leaves as the one envelope."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from threadline.kit.context import request_id_of
from threadline.kit.errors import (
    ApiError,
    BadRequest,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    Reason,
    error_response,
)
from threadline.kit.routing import OperationIndex

_MAX_LISTED = 5


def _respond(request: Request, error: ApiError) -> Response:
    operations: OperationIndex = request.app.state.operations
    return error_response(error, operations.operation_id(request.scope), request_id_of(request.scope))


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _respond(request, exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Only routing and the framework raise these: a path or method with no operation, a body limit."""
    assert isinstance(exc, HTTPException)
    error: ApiError
    if exc.status_code == 404:
        error = NotFound(f"No operation at {request.method} {request.url.path}.")
    elif exc.status_code == 405:
        operations: OperationIndex = request.app.state.operations
        allowed = operations.allowed_methods(request.scope)
        headers = {"Allow": ", ".join(allowed)} if allowed else dict(exc.headers or {})
        error = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}.", headers=headers)
    elif exc.status_code == 413:
        error = PayloadTooLarge("The request body is too large.")
    elif exc.status_code == 400:
        error = BadRequest("The request body could not be read.")
    else:
        error = InternalError()
    return _respond(request, error)


def _field(loc: tuple[Any, ...]) -> str:
    parts = (
        [str(p) for p in loc[1:]]
        if loc and loc[0] in ("body", "query", "path", "header")
        else [str(p) for p in loc]
    )
    return ".".join(parts) or str(loc[0] if loc else "body")


def validation_failed(
    problems: Sequence[Any], field: Callable[[tuple[Any, ...]], str] = _field
) -> BadRequest:
    """The one 400 for failed validation: each problem named (at most five), missing fields listed in
    missingContext. ``field`` says how a problem's location reads to the client."""
    missing = [field(tuple(p["loc"])) for p in problems if p.get("type") == "missing"]
    described = []
    for problem in problems[:_MAX_LISTED]:
        where = field(tuple(problem["loc"]))
        message = (
            "unknown field" if problem.get("type") == "extra_forbidden" else problem.get("msg", "invalid")
        )
        described.append(f"{where}: {message}")
    more = f" (and {len(problems) - _MAX_LISTED} more)" if len(problems) > _MAX_LISTED else ""
    return BadRequest(
        "Invalid request: " + "; ".join(described) + more + ".",
        reason=Reason.VALIDATION_FAILED,
        missing_context=missing,
    )


def invalid_json(detail: str) -> BadRequest:
    return BadRequest(f"The body is not valid JSON: {detail}.", reason=Reason.INVALID_JSON)


def request_invalid(exc: RequestValidationError) -> BadRequest:
    """What a ``RequestValidationError`` answers: a 400 (never 422), for routing's handler and for the
    endpoints served before routing alike."""
    problems = list(exc.errors())
    if any(p.get("type") == "json_invalid" for p in problems):
        detail = next(p for p in problems if p.get("type") == "json_invalid").get("ctx", {}).get("error", "")
        return invalid_json(detail)
    return validation_failed(problems)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return _respond(request, request_invalid(exc))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
