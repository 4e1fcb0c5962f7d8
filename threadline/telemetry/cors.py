"""CORS for the intake, so browsers can send telemetry with a project's public key.

Which origins may send is the organization's ``allowedOrigins`` setting, and the organization is known only
from the key. A real request carries the key, so its response names the allowed origin (or none, and the
request is refused: ``ORIGIN_NOT_ALLOWED``, nothing stored). A preflight carries no headers of the page's
own, so it can know the organization only when the page puts the key in the URL as well
(``?key=pk_…``); without it the preflight lets the browser go on to the real request, which is where the
origin is enforced. Errors answered before the key was accepted (401, 429) echo the origin, so the page
can read why it was refused.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.access.principal import PRINCIPAL_SCOPE_KEY, Principal
from threadline.keys.middleware import AccessServices, limit_by_address
from threadline.kit.context import header_of
from threadline.kit.errors import Forbidden, Reason, TooManyRequests
from threadline.kit.services import ServicesOf
from threadline.settings.service import DEFAULT_ALLOWED_ORIGINS

# The methods of the intake's paths: a 405's `Allow`, a plain OPTIONS's and a preflight's answer.
ALLOW = b"POST, OPTIONS"
_ALLOW_HEADERS = b"content-type, content-encoding, x-service-key, x-request-id"
_EXPOSE_HEADERS = b"x-request-id, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after"
_MAX_AGE = b"600"


def allowed_origin(principal: Principal, origin: bytes) -> bytes | None:
    """The ``Access-Control-Allow-Origin`` value for this organization and origin, or None (refused)."""
    origins = principal.organization.allowed_origins or DEFAULT_ALLOWED_ORIGINS
    if "*" in origins:
        return b"*"
    return origin if origin.decode("latin-1").lower() in {o.lower() for o in origins} else None


def check_origin(origin: bytes, principal: Principal) -> None:
    """A browser page from an origin the organization did not allow is refused before its body is read."""
    if allowed_origin(principal, origin) is None:
        raise Forbidden(
            f"Origin {origin.decode('latin-1')} is not in this organization's allowedOrigins.",
            reason=Reason.ORIGIN_NOT_ALLOWED,
        )


class CorsMiddleware:
    def __init__(self, app: ASGIApp, *, runtime: ServicesOf[AccessServices], paths: frozenset[str]) -> None:
        self.app = app
        self.runtime = runtime
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        origin = header_of(scope, b"origin")
        if scope["method"] == "OPTIONS":
            if origin is not None and header_of(scope, b"access-control-request-method") is not None:
                await self._preflight(scope, origin, send)
            else:
                # Not a preflight: a plain OPTIONS asks what the resource allows (RFC 9110 9.3.7), so it
                # is answered as the ``Allow`` of a 405 here promises, without a key (it reveals nothing).
                await _no_content(send, [(b"allow", ALLOW)])
            return
        if origin is None:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                principal = scope.get(PRINCIPAL_SCOPE_KEY)
                allowed = allowed_origin(principal, origin) if isinstance(principal, Principal) else origin
                if allowed is not None:
                    message["headers"] = [*message.get("headers", ()), *_cors_headers(allowed)]
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _preflight(self, scope: Scope, origin: bytes, send: Send) -> None:
        allowed: bytes | None = origin
        key = _query_key(scope)
        if key is not None:
            services = self.runtime.services
            try:
                # A key in the URL may cost a lookup: throttled like any request without a valid key.
                await limit_by_address(services, scope, "intake")
            except TooManyRequests as refused:
                retry_after = str(refused.retry_after_seconds).encode()
                headers = [(b"content-length", b"0"), (b"retry-after", retry_after)]
                await send({"type": "http.response.start", "status": 429, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
            principal = await services.authenticator.authenticate(key)
            if principal is not None and principal.key.type == "public" and principal.key.revoked_at is None:
                allowed = allowed_origin(principal, origin)
        headers = [(b"vary", b"Origin"), (b"allow", ALLOW)]
        if allowed is not None:
            headers += [
                *_cors_headers(allowed),
                (b"access-control-allow-methods", ALLOW),
                (b"access-control-allow-headers", _ALLOW_HEADERS),
                (b"access-control-max-age", _MAX_AGE),
            ]
        await _no_content(send, headers)


async def _no_content(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {"type": "http.response.start", "status": 204, "headers": [(b"content-length", b"0"), *headers]}
    )
    await send({"type": "http.response.body", "body": b""})


def _cors_headers(allowed: bytes) -> list[tuple[bytes, bytes]]:
    headers = [(b"access-control-allow-origin", allowed), (b"access-control-expose-headers", _EXPOSE_HEADERS)]
    if allowed != b"*":
        headers.append((b"vary", b"Origin"))
    return headers


def _query_key(scope: Scope) -> bytes | None:
    for part in bytes(scope.get("query_string", b"")).split(b"&"):
        name, _, value = part.partition(b"=")
        if name == b"key" and value:
            return value
    return None
