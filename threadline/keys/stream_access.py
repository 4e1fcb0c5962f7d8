"""Requests that carry a stream token (``?token=st_…``) instead of a key: authenticated here, before routing.

The access middleware hands a request over only when it has no credential header and its query names a
``token``, so requests with a key never pay for any of this. A token opens exactly the stream it was made
for, and only by ``GET /v1/runs/{runId}/stream`` or ``GET /v1/threads/{threadId}/stream``: anything else
is 401 (the only credential accepted in a URL, and only there), another run or thread 404 (as for another
organization's), expired 401 ``TOKEN_EXPIRED``, the minting key revoked 401 ``KEY_REVOKED``, a page from an
origin the token does not allow 403 ``ORIGIN_NOT_ALLOWED``. Then it is the minting key's request: its
principal, its buckets, its 429s.

CORS: the answer names the page's origin when the token allows it (``Vary: Origin``) and exposes the
rate-limit headers; refusals made before the token is known (401, 429) echo the origin too, so a page can
read why. A preflight (a browser sends one when it adds ``Last-Event-ID`` to a cross-origin reconnection)
is answered without a lookup: the real request is where the token and its origins are checked.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.access.principal import PRINCIPAL_SCOPE_KEY, Principal
from threadline.config import Settings
from threadline.keys import stream_tokens
from threadline.keys.auth import KeyAuthenticator
from threadline.kit.clock import Clock
from threadline.kit.context import RATE_LIMIT_SCOPE_KEY, header_of
from threadline.kit.db import Database
from threadline.kit.errors import (
    ApiError,
    ErrorRenderer,
    Forbidden,
    NotFound,
    Reason,
    TooManyRequests,
    Unauthorized,
)
from threadline.kit.faults import dependency_of, unavailable
from threadline.kit.ratelimit import Bucket, RateLimiter
from threadline.kit.routing import OperationIndex

log = logging.getLogger(__name__)

_STREAM_PATH = re.compile(r"^/v1/(runs|threads)/([^/]+)/stream$")
_EXPOSE_HEADERS = b"x-request-id, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after"
_ALLOW_HEADERS = b"last-event-id, x-request-id"
_MAX_AGE = b"600"


class TokenServices(Protocol):
    settings: Settings
    clock: Clock
    db: Database
    limiter: RateLimiter
    authenticator: KeyAuthenticator


class TokenHost(Protocol):
    """What the access middleware lends a token request: the app, its refusals and its buckets."""

    app: ASGIApp
    operations: OperationIndex
    render_error: ErrorRenderer

    @property
    def token_services(self) -> TokenServices: ...

    def buckets(self, principal: Principal) -> tuple[Bucket, ...]: ...

    async def limit_anonymously(self, scope: Scope) -> None: ...


def query_token(scope: Scope) -> bytes | None:
    """The ``token`` of the query string, or None; the query is parsed only when it may hold one."""
    query = bytes(scope.get("query_string", b""))
    if b"token=" not in query:
        return None
    for name, value in parse_qsl(query.decode("latin-1")):
        if name == "token":
            return value.encode("latin-1")
    return None


async def serve_with_token(host: TokenHost, scope: Scope, receive: Receive, send: Send, token: bytes) -> None:
    origin = header_of(scope, b"origin")
    match = _STREAM_PATH.match(scope["path"])
    if match is not None and origin is not None and _is_preflight(scope):
        await _preflight(host, scope, origin, send)
        return
    cors = origin  # what a refusal answers: the page may read why, except a refusal of its origin
    try:
        try:
            if match is None or scope["method"] != "GET":
                await host.limit_anonymously(scope)
                raise Unauthorized(
                    "A stream token is accepted only by GET /v1/runs/{runId}/stream and GET "
                    "/v1/threads/{threadId}/stream; send a secret key in the Authorization header.",
                    missing_context=["Authorization"],
                )
            found, principal = await _authenticate(host, scope, token)
            if origin is not None and not found.allows_origin(origin.decode("latin-1")):
                cors = None
                await host.limit_anonymously(scope)
                raise Forbidden(
                    f"Origin {origin.decode('latin-1')} may not use this stream token.",
                    reason=Reason.ORIGIN_NOT_ALLOWED,
                )
            decision = await host.token_services.limiter.hit(host.buckets(principal))
            scope[RATE_LIMIT_SCOPE_KEY] = decision.headers()
            if not decision.allowed:
                raise TooManyRequests(decision.retry_after)
            kind, stream_id = match.groups()
            if stream_id != (found.run_id if kind == "runs" else found.thread_id):
                # As for another organization's run: nothing says whether it exists.
                raise NotFound(f"{'Run' if kind == 'runs' else 'Thread'} {stream_id} was not found.")
            scope[PRINCIPAL_SCOPE_KEY] = principal
        except Exception as exc:
            if (dependency := dependency_of(exc)) is None:
                raise
            log.warning("stream token authentication unavailable: %r", exc)
            raise unavailable(exc, dependency) from exc
    except ApiError as error:
        response = host.render_error(scope, error, host.operations.operation_id(scope))
        await response(scope, receive, _with_cors(send, cors))
        return
    await host.app(scope, receive, _with_cors(send, origin))


async def _authenticate(
    host: TokenHost, scope: Scope, token: bytes
) -> tuple[stream_tokens.StreamToken, Principal]:
    """The token and its minting key's principal; refusals are charged to the client address."""
    services = host.token_services
    async with services.db.transaction(write=False) as conn:
        found = await stream_tokens.find(conn, token)
    if found is None:
        await host.limit_anonymously(scope)
        raise Unauthorized("The stream token is not valid.", reason=Reason.INVALID_KEY)
    if found.expires_at <= services.clock.now():
        await host.limit_anonymously(scope)
        raise Unauthorized(
            "The stream token has expired; ask the server that gave it for a new one.",
            reason=Reason.TOKEN_EXPIRED,
        )
    principal = await services.authenticator.principal_of_hash(found.key_hash)
    if principal is None or principal.key.revoked_at is not None:
        await host.limit_anonymously(scope)
        raise Unauthorized("The key that made this stream token has been revoked.", reason=Reason.KEY_REVOKED)
    return found, principal


def _is_preflight(scope: Scope) -> bool:
    return scope["method"] == "OPTIONS" and header_of(scope, b"access-control-request-method") is not None


async def _preflight(host: TokenHost, scope: Scope, origin: bytes, send: Send) -> None:
    headers = [(b"content-length", b"0"), (b"vary", b"Origin")]
    try:
        await host.limit_anonymously(scope)
    except TooManyRequests as refused:
        headers.append((b"retry-after", str(refused.retry_after_seconds).encode()))
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    headers += [
        (b"access-control-allow-origin", origin),
        (b"access-control-allow-methods", b"GET"),
        (b"access-control-allow-headers", _ALLOW_HEADERS),
        (b"access-control-max-age", _MAX_AGE),
    ]
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _with_cors(send: Send, origin: bytes | None) -> Send:
    if origin is None:
        return send
    headers = [
        (b"access-control-allow-origin", origin),
        (b"access-control-expose-headers", _EXPOSE_HEADERS),
        (b"vary", b"Origin"),
    ]

    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *headers]
        await send(message)

    return send_with_cors
