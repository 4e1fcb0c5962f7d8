"""The outermost middleware: a request id on every response, the rate-limit headers decided further in,
and the last line of defence that turns any unhandled exception into an envelope without internals: 503
``DEPENDENCY_DOWN`` for an outage of a dependency (``kit.faults``), which no route need catch itself, else
500."""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import traceback

from sqlalchemy.exc import StatementError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.kit.errors import REQUEST_ID_SCOPE_KEY, ApiError, InternalError, error_response
from threadline.kit.faults import dependency_of, unavailable
from threadline.kit.routing import OperationIndex

log = logging.getLogger("threadline.request")

RATE_LIMIT_SCOPE_KEY = "threadline.ratelimit_headers"
_INCOMING_ID = re.compile(rb"^[A-Za-z0-9._:\-]{1,128}$")


_PROCESS_TOKEN = secrets.token_hex(8)
_request_counter = itertools.count(1)


def _next_request_id() -> str:
    """Unique across processes (a random per-process token) without a system call per request."""
    return f"req_{_PROCESS_TOKEN}{next(_request_counter):012x}"


def header_of(scope: Scope, wanted: bytes) -> bytes | None:
    """The first value of a header (``wanted`` in lower case, as ASGI gives names), or None."""
    for name, value in scope["headers"]:
        if name == wanted:
            return bytes(value)
    return None


def client_address(scope: Scope, trust_forwarded_for: bool) -> str:
    """The caller's address: the socket's peer, or with ``trust_forwarded_for`` the last entry of
    ``X-Forwarded-For`` (the one our own proxy appended; earlier ones are the client's to forge)."""
    forwarded = header_of(scope, b"x-forwarded-for") if trust_forwarded_for else None
    if forwarded is not None:
        return forwarded.decode("latin-1").rsplit(",", 1)[-1].strip()
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def log_unhandled(logger: logging.Logger, error: BaseException, what: str, request_id: str | None) -> None:
    """An error nothing handled, logged with the request id. A database error's text holds its SQL
    statement, and its driver's message may quote the rows' values (a duplicate key's, a constraint's):
    tenant data the log must not hold. Of one, the log has its class, its driver error's class and where
    it was raised (frames only, no values); of any other error, the whole traceback."""
    if isinstance(error, StatementError):
        frames = "".join(traceback.format_tb(error.__traceback__))
        cause = type(error.orig).__name__ if error.orig is not None else "-"
        logger.error(
            "%s [%s]: database error %s (%s)\n%s", what, request_id, type(error).__name__, cause, frames
        )
    else:
        logger.error("%s [%s]", what, request_id, exc_info=error)


def request_id_of(scope: Scope) -> str | None:
    value = scope.get(REQUEST_ID_SCOPE_KEY)
    return value if isinstance(value, str) else None


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, operations: OperationIndex) -> None:
        self.app = app
        self.operations = operations

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = None
        for name, value in scope["headers"]:
            if name == b"x-request-id" and _INCOMING_ID.match(value):
                request_id = value.decode()
                break
        if request_id is None:
            request_id = _next_request_id()
        scope[REQUEST_ID_SCOPE_KEY] = request_id
        id_header = (b"x-request-id", request_id.encode())
        started = False

        async def send_with_context(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [
                    *message.get("headers", ()),
                    id_header,
                    *scope.get(RATE_LIMIT_SCOPE_KEY, ()),
                ]
            await send(message)

        try:
            await self.app(scope, receive, send_with_context)
        except Exception as exc:
            dependency = dependency_of(exc)
            error: ApiError
            if dependency is None:
                log_unhandled(log, exc, f"unhandled error in {scope['method']} {scope['path']}", request_id)
                error = InternalError()
            else:
                log.warning(
                    "%s unavailable in %s %s [%s]: %s",
                    dependency,
                    scope["method"],
                    scope["path"],
                    request_id,
                    type(exc).__name__,
                )
                error = unavailable(exc, dependency)
            if started:
                raise
            response = error_response(error, self.operations.operation_id(scope), request_id)
            await response(scope, receive, send_with_context)
