"""One exception class per status, as in the SDKs users already know, so that ``except NotFoundError`` reads
like the failure it handles; each carries the error envelope's fields (code, reason, operationId,
requestId, missingContext) so a log line or a support request can name the exact call that failed."""

from __future__ import annotations

from typing import Any


class ThreadlineError(Exception):
    """Every error the client raises."""


class APIConnectionError(ThreadlineError):
    """The server could not be reached, or the connection broke (after the retries allowed)."""


class APITimeoutError(APIConnectionError):
    """The server did not answer within the timeout (after the retries allowed)."""


class APIStatusError(ThreadlineError):
    """An error answer. ``body`` is the envelope as sent; its fields are attributes too."""

    def __init__(self, status: int, body: dict[str, Any], request_id: str | None = None) -> None:
        self.status = status
        self.body = body
        self.code: str = str(body.get("code", ""))
        self.reason: str | None = body.get("reason")
        self.operation_id: str | None = body.get("operationId")
        self.request_id: str | None = body.get("requestId") or request_id
        missing = body.get("missingContext")
        self.missing_context: list[str] = [str(m) for m in missing] if isinstance(missing, list) else []
        retry_after = body.get("retryAfterSeconds")
        self.retry_after_seconds: int | None = retry_after if isinstance(retry_after, int) else None
        message = str(body.get("message", f"HTTP {status}"))
        super().__init__(f"{status} {self.code}: {message}" + (f" [{self.reason}]" if self.reason else ""))


class BadRequestError(APIStatusError):
    """400 (and 422): the request is malformed; ``reason`` and the message say which field."""


class AuthenticationError(APIStatusError):
    """401: no key, an unknown key, or a revoked one."""


class PermissionDeniedError(APIStatusError):
    """403: the key is valid but may not do this (a public key on the API, another organization's object)."""


class NotFoundError(APIStatusError):
    """404."""


class ConflictError(APIStatusError):
    """409: the object's state forbids it now (``RUN_ACTIVE``, ``RUN_ENDED``…)."""


class RateLimitError(APIStatusError):
    """429 after the retries allowed; ``retry_after_seconds`` says when to come back."""


class InternalServerError(APIStatusError):
    """5xx after the retries allowed."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: BadRequestError,
    429: RateLimitError,
}


def error_for(status: int, body: dict[str, Any], request_id: str | None = None) -> APIStatusError:
    cls = _BY_STATUS.get(status, InternalServerError if status >= 500 else APIStatusError)
    return cls(status, body, request_id)
