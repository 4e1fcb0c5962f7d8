"""The one error tree and the one envelope every non-2xx response is written with.

ApiError (an HTTPException, so the framework's body parsing re-raises it untouched)
├── BadRequest          400 BAD_REQUEST
├── Unauthorized        401 UNAUTHORIZED
├── Forbidden           403 FORBIDDEN
├── NotFound            404 NOT_FOUND
├── MethodNotAllowed    405 METHOD_NOT_ALLOWED
├── Conflict            409 CONFLICT
├── PayloadTooLarge     413 PAYLOAD_TOO_LARGE
├── TooManyRequests     429 TOO_MANY_REQUESTS (both envelopes the spec shows, in one body)
├── NotImplementedYet   501 NOT_IMPLEMENTED
├── BadGateway          502 BAD_GATEWAY (a peer the tenant configured, e.g. an MCP server, failed)
├── ServiceUnavailable  503 SERVICE_UNAVAILABLE
└── InternalError       500 INTERNAL_SERVER_ERROR (never carries internals)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, ClassVar

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Scope

UNKNOWN_OPERATION = "unknown"


# Clients branch on a reason, so the contract lists them all (``kit.openapi.ErrorBody``) and none other is
# raised (``ApiError`` takes only these; tests/kit/test_errors.py checks the raise sites). The docstring is
# the contract's description of the list.
class Reason(StrEnum):
    """Every machine-readable sub-code an error body's ``reason`` may hold; stable, unlike ``message``."""

    AMBIGUOUS_CREDENTIAL = "AMBIGUOUS_CREDENTIAL"
    AUTOMATION_LIMIT = "AUTOMATION_LIMIT"
    DEPENDENCY_DOWN = "DEPENDENCY_DOWN"
    EGRESS_NOT_ALLOWED = "EGRESS_NOT_ALLOWED"
    IDEMPOTENCY_KEY_IN_USE = "IDEMPOTENCY_KEY_IN_USE"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    INSUFFICIENT_CREDITS = "INSUFFICIENT_CREDITS"
    INVALID_CURSOR = "INVALID_CURSOR"
    INVALID_ENCODING = "INVALID_ENCODING"
    INVALID_JSON = "INVALID_JSON"
    INVALID_KEY = "INVALID_KEY"
    INVALID_OTLP = "INVALID_OTLP"
    INVALID_QUERY = "INVALID_QUERY"
    KEY_REVOKED = "KEY_REVOKED"
    MCP_UNREACHABLE = "MCP_UNREACHABLE"
    ORIGIN_NOT_ALLOWED = "ORIGIN_NOT_ALLOWED"
    PUBLIC_KEY_NOT_ALLOWED = "PUBLIC_KEY_NOT_ALLOWED"
    QUEUED_RUN_LIMIT = "QUEUED_RUN_LIMIT"
    READ_ONLY_FIELD = "READ_ONLY_FIELD"
    RUN_ACTIVE = "RUN_ACTIVE"
    RUN_ENDED = "RUN_ENDED"
    RUN_NOT_WAITING = "RUN_NOT_WAITING"
    SECRET_KEY_NOT_ALLOWED = "SECRET_KEY_NOT_ALLOWED"  # noqa: S105 - a reason, not a secret
    THREAD_NOT_FOUND = "THREAD_NOT_FOUND"
    TOKEN_EXPIRED = "TOKEN_EXPIRED"  # noqa: S105 - a reason, not a secret
    TOOL_NAME_CONFLICT = "TOOL_NAME_CONFLICT"
    TOOL_OUTPUTS_INCOMPLETE = "TOOL_OUTPUTS_INCOMPLETE"
    TOO_MANY_STREAMS = "TOO_MANY_STREAMS"
    UNKNOWN_TOOL_CALL = "UNKNOWN_TOOL_CALL"
    UNSUPPORTED_ENCODING = "UNSUPPORTED_ENCODING"
    USE_INTAKE = "USE_INTAKE"
    VALIDATION_FAILED = "VALIDATION_FAILED"


class ApiError(HTTPException):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "INTERNAL_SERVER_ERROR"

    def __init__(
        self,
        message: str,
        *,
        reason: Reason | None = None,
        missing_context: Sequence[str] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status_code=self.status, detail=message, headers=headers)
        self.message = message
        self.reason = reason
        self.missing_context = list(missing_context)

    def body(self, operation_id: str, request_id: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "operationId": operation_id,
            "missingContext": self.missing_context,
        }
        if self.reason is not None:
            body["reason"] = self.reason
        if request_id is not None:
            body["requestId"] = request_id
        return body


class BadRequest(ApiError):
    status = 400
    code = "BAD_REQUEST"


class Unauthorized(ApiError):
    status = 401
    code = "UNAUTHORIZED"


class Forbidden(ApiError):
    status = 403
    code = "FORBIDDEN"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


class MethodNotAllowed(ApiError):
    status = 405
    code = "METHOD_NOT_ALLOWED"


class Conflict(ApiError):
    status = 409
    code = "CONFLICT"


class PayloadTooLarge(ApiError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"


class TooManyRequests(ApiError):
    """Carries the versioned API's top-level form and the key guide's ``data``/``error`` form together,
    so a client written against either envelope works."""

    status = 429
    code = "TOO_MANY_REQUESTS"

    def __init__(
        self, retry_after_seconds: int, *, message: str | None = None, reason: Reason | None = None
    ) -> None:
        self.retry_after_seconds = max(1, retry_after_seconds)
        super().__init__(
            message or f"Rate limit exceeded. Retry after {self.retry_after_seconds} seconds.",
            reason=reason,
            headers={"Retry-After": str(self.retry_after_seconds)},
        )

    def body(self, operation_id: str, request_id: str | None) -> dict[str, Any]:
        body = super().body(operation_id, request_id)
        body["retryAfterSeconds"] = self.retry_after_seconds
        body["data"] = None
        body["error"] = {"code": "RATE_LIMIT_EXCEEDED", "message": self.message}
        return body


class NotImplementedYet(ApiError):
    status = 501
    code = "NOT_IMPLEMENTED"


class BadGateway(ApiError):
    status = 502
    code = "BAD_GATEWAY"


class ServiceUnavailable(ApiError):
    status = 503
    code = "SERVICE_UNAVAILABLE"


class InternalError(ApiError):
    status = 500
    code = "INTERNAL_SERVER_ERROR"

    def __init__(self) -> None:
        super().__init__("An unexpected error occurred. Quote the requestId when reporting it.")


def error_response(error: ApiError, operation_id: str, request_id: str | None) -> Response:
    """The single writer of the error envelope (handlers and middleware both end here)."""
    content = json.dumps(error.body(operation_id, request_id), separators=(",", ":"), ensure_ascii=False)
    return Response(
        content.encode(),
        status_code=error.status,
        headers=error.headers,
        media_type="application/json",
    )


REQUEST_ID_SCOPE_KEY = "threadline.request_id"
ErrorRenderer = Callable[[Scope, ApiError, str], Response]


def render_envelope(scope: Scope, error: ApiError, operation_id: str) -> Response:
    """The default ``ErrorRenderer``: the envelope, with the request's id."""
    request_id = scope.get(REQUEST_ID_SCOPE_KEY)
    return error_response(error, operation_id, request_id if isinstance(request_id, str) else None)
