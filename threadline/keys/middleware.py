"""Authentication and rate limiting for every versioned request, before routing.

Running before the router means every ``/v1`` response, including unknown paths and errors, carries
the rate-limit headers, and an unauthenticated caller learns nothing about which paths exist. Requests
without a valid key (and public documents such as the contract) draw from a per-client-address bucket,
which also throttles key guessing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.access.principal import PRINCIPAL_SCOPE_KEY, Principal
from threadline.config import Settings
from threadline.keys.auth import KeyAuthenticator
from threadline.keys.stream_access import query_token, serve_with_token
from threadline.kit.clock import Clock
from threadline.kit.context import RATE_LIMIT_SCOPE_KEY, client_address
from threadline.kit.db import Database
from threadline.kit.errors import (
    ApiError,
    BadRequest,
    ErrorRenderer,
    Forbidden,
    PayloadTooLarge,
    Reason,
    TooManyRequests,
    Unauthorized,
    render_envelope,
)
from threadline.kit.faults import dependency_of, unavailable
from threadline.kit.ratelimit import Bucket, RateLimiter
from threadline.kit.routing import OperationIndex
from threadline.kit.services import ServicesOf

log = logging.getLogger(__name__)

Surface = Literal["api", "intake"]
_PUBLIC_PREFIXES = ("/v1/openapi.json",)


class AccessServices(Protocol):
    """What authentication and rate limiting read from the process's services."""

    settings: Settings
    clock: Clock  # a stream token's expiry
    db: Database
    limiter: RateLimiter
    authenticator: KeyAuthenticator


class AccessMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        runtime: ServicesOf[AccessServices],
        operations: OperationIndex,
        surface: Surface,
        public_paths: Sequence[str] = _PUBLIC_PREFIXES,
        body_limit: int | None = None,
        render_error: ErrorRenderer = render_envelope,
    ) -> None:
        self.app = app
        self.runtime = runtime
        self.operations = operations
        self.surface = surface
        self.public_paths = tuple(public_paths)
        self.body_limit = body_limit
        self.render_error = render_error
        self.accepted_type = "secret" if surface == "api" else "public"
        self.missing_header = "Authorization" if surface == "api" else "x-service-key"
        self._memo_key = f"{surface}.buckets"
        self.stream_tokens = surface == "api"  # browsers read run streams with ?token=st_… (stream_access)

    @property
    def token_services(self) -> AccessServices:
        return self.runtime.services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not (scope["path"].startswith("/v1/") or scope["path"] == "/v1"):
            await self.app(scope, receive, send)
            return
        services = self.runtime.services
        bearer = secret_header = public_header = content_length = None
        repeated = False  # a credential header sent twice with different values
        for name, value in scope["headers"]:
            if name == b"authorization":
                repeated |= bearer is not None and bearer != value
                bearer = value
            elif name == b"x-service-secret-key":
                repeated |= secret_header is not None and secret_header != value
                secret_header = value
            elif name == b"x-service-key":
                repeated |= public_header is not None and public_header != value
                public_header = value
            elif name == b"content-length":
                content_length = value

        if bearer is None and secret_header is None and public_header is None and self.stream_tokens:
            # No key: perhaps a browser's stream with a token (never on a request that sends a key).
            token = query_token(scope)
            if token is not None:
                await serve_with_token(self, scope, receive, send, token)
                return
        limit = self.body_limit or services.settings.max_request_body_bytes
        try:
            try:
                if content_length is not None and not content_length.isdigit():
                    await self.limit_anonymously(scope)
                    raise BadRequest("The Content-Length header is not a number.")
                if content_length is not None and int(content_length) > limit:
                    await self.limit_anonymously(scope)
                    raise PayloadTooLarge(_too_large(limit))
                if scope["path"] in self.public_paths:
                    await self.limit_anonymously(scope)
                else:
                    if repeated or (
                        (bearer is not None) + (secret_header is not None) + (public_header is not None) > 1
                        and _different_keys(bearer, secret_header, public_header)
                    ):
                        await self.limit_anonymously(scope)
                        raise BadRequest(
                            "More than one credential was sent, naming different keys: send one key, in "
                            f"the {self.missing_header} header.",
                            reason=Reason.AMBIGUOUS_CREDENTIAL,
                        )
                    principal = await self._authenticate(scope, bearer, secret_header, public_header)
                    decision = await services.limiter.hit(self.buckets(principal))
                    scope[RATE_LIMIT_SCOPE_KEY] = decision.headers()
                    if not decision.allowed:
                        raise TooManyRequests(decision.retry_after)
                    scope[PRINCIPAL_SCOPE_KEY] = principal
            except Exception as exc:
                if (dependency := dependency_of(exc)) is None:
                    raise
                log.warning("authentication or rate limiting unavailable: %r", exc)
                raise unavailable(exc, dependency) from exc
        except ApiError as error:
            response = self.render_error(scope, error, self.operations.operation_id(scope))
            await response(scope, receive, send)
            return
        if content_length is None and scope["method"] not in ("GET", "HEAD"):
            receive = _limited(receive, limit)
        await self.app(scope, receive, send)

    def buckets(self, principal: Principal) -> tuple[Bucket, ...]:
        """The organization's bucket, and the key's when the key has a budget of its own.

        A key bucket with the organization's limit could never refuse first: every request it sees also
        drains the organization bucket, which refills at the same rate to the same capacity. Leaving it
        out changes no decision and halves the limiter's work on the hot path."""
        buckets: tuple[Bucket, ...] | None = principal.memo.get(self._memo_key)
        if buckets is None:
            # The {braces} are a Redis Cluster hash tag: a request's buckets share one slot (one script).
            tag = f"{self.surface}:{{{principal.organization_id}}}"
            org = Bucket(f"{tag}:org", principal.organization_limit)
            if principal.key_limit < principal.organization_limit:
                buckets = (org, Bucket(f"{tag}:key:{principal.key.id}", principal.key_limit))
            else:
                buckets = (org,)
            principal.memo[self._memo_key] = buckets
        return buckets

    async def _authenticate(
        self, scope: Scope, bearer: bytes | None, secret_header: bytes | None, public_header: bytes | None
    ) -> Principal:
        if self.surface == "api":
            raw = (
                bearer
                if bearer is not None
                else secret_header
                if secret_header is not None
                else public_header
            )
        else:
            raw = public_header if public_header is not None else bearer or secret_header
        if raw is None:
            await self.limit_anonymously(scope)
            raise Unauthorized(
                f"No credential: send your key in the {self.missing_header} header.",
                missing_context=[self.missing_header],
            )
        value = raw.strip()
        if raw is bearer:
            scheme, _, value = value.partition(b" ")
            if scheme.lower() != b"bearer":
                await self.limit_anonymously(scope)
                raise Unauthorized(
                    "The Authorization header must be `Bearer <key>`.", reason=Reason.INVALID_KEY
                )
            value = value.strip()
        principal = await self.runtime.services.authenticator.authenticate(value)
        if principal is None:
            await self.limit_anonymously(scope)
            raise Unauthorized("The key is not valid.", reason=Reason.INVALID_KEY)
        if principal.key.revoked_at is not None:
            await self.limit_anonymously(scope)
            raise Unauthorized("The key has been revoked.", reason=Reason.KEY_REVOKED)
        if principal.key.type != self.accepted_type:
            # Charged to the client address, not the organization: public keys are meant to be seen, and
            # sending one to the API must not drain the organization's budget.
            await self.limit_anonymously(scope)
            if self.surface == "api":
                raise Forbidden(
                    "Public keys are for telemetry intake only; use a secret key for the API.",
                    reason=Reason.PUBLIC_KEY_NOT_ALLOWED,
                )
            raise Forbidden(
                "Secret keys are never sent to the intake; use the project's public key.",
                reason=Reason.SECRET_KEY_NOT_ALLOWED,
            )
        return principal

    async def limit_anonymously(self, scope: Scope) -> None:
        await limit_by_address(self.runtime.services, scope, self.surface)


async def limit_by_address(services: AccessServices, scope: Scope, surface: Surface) -> None:
    """Public documents, refused requests and CORS preflights that name a key cost the client address a
    token (and may become a 429): what is not charged to an organization is still throttled."""
    client = client_address(scope, services.settings.trust_forwarded_for)
    limit = services.settings.default_rate_limit_per_minute
    decision = await services.limiter.hit((Bucket(f"{surface}:ip:{client}", limit),))
    scope[RATE_LIMIT_SCOPE_KEY] = decision.headers()
    if not decision.allowed:
        raise TooManyRequests(decision.retry_after)


def _different_keys(bearer: bytes | None, secret_header: bytes | None, public_header: bytes | None) -> bool:
    """Whether the credential headers sent name more than one key (the same key twice is harmless; which
    of two different keys was meant is not ours to guess)."""
    keys = {header.strip() for header in (secret_header, public_header) if header is not None}
    if bearer is not None:
        scheme, _, value = bearer.strip().partition(b" ")
        keys.add(value.strip() if scheme.lower() == b"bearer" else bearer.strip())
    return len(keys) > 1


def _too_large(limit: int) -> str:
    return f"The request body is larger than the limit of {limit} bytes."


def _limited(receive: Receive, limit: int) -> Receive:
    """For bodies without Content-Length: count as they stream in and stop at the limit."""
    received = 0

    async def limited_receive() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise PayloadTooLarge(_too_large(limit))
        return message

    return limited_receive
