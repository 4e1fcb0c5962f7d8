"""One exception class per status, as in the SDKs users already know; each carries the error envelope."""

from __future__ import annotations

from typing import Any


class ThreadlineError(Exception):
    pass


class APIConnectionError(ThreadlineError):
    """The server could not be reached (after retries)."""


class APIStatusError(ThreadlineError):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.code: str = str(body.get("code", ""))
        self.reason: str | None = body.get("reason")
        self.operation_id: str | None = body.get("operationId")
        self.request_id: str | None = body.get("requestId")
        message = str(body.get("message", f"HTTP {status}"))
        super().__init__(f"{status} {self.code}: {message}" + (f" [{self.reason}]" if self.reason else ""))


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    pass


class NotFoundError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    pass


class InternalServerError(APIStatusError):
    pass


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
}


def error_for(status: int, body: dict[str, Any]) -> APIStatusError:
    cls = _BY_STATUS.get(status, InternalServerError if status >= 500 else APIStatusError)
    return cls(status, body)
