"""Who is calling: key lookup with a short-lived cache, and the named dependencies handlers declare.

Authentication runs on every request, so a database round trip per request would dominate the cost of
cheap endpoints. Principals are cached per key hash for ``key_cache_ttl_seconds`` (at most 1 s), which
bounds how long a revocation can go unseen even if its signal is lost; the signal itself (``key.revoked``,
``org.updated``) drops the entry at once on every process. Concurrent misses for one key share one query.
``lastUsedAt`` is collected in memory and written in batches, so a request never waits on a write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPBearer

from threadline.config import Settings
from threadline.keys import repository
from threadline.keys.repository import ApiKey
from threadline.keys.tokens import hash_key, looks_like_key
from threadline.kit.clock import utcnow
from threadline.kit.db import Database
from threadline.kit.signals import RESET, SignalBus
from threadline.organizations.repository import Organization

log = logging.getLogger(__name__)

KEY_REVOKED = "key.revoked"
ORG_UPDATED = "org.updated"
PRINCIPAL_SCOPE_KEY = "threadline.principal"


@dataclass(frozen=True, slots=True)
class Principal:
    key: ApiKey
    organization: Organization
    organization_limit: int

    @property
    def organization_id(self) -> str:
        return self.organization.id

    @property
    def key_limit(self) -> int:
        own = self.key.rate_limit_per_minute
        return self.organization_limit if own is None else min(own, self.organization_limit)


class KeyAuthenticator:
    def __init__(self, db: Database, signals: SignalBus, settings: Settings) -> None:
        self._db = db
        self._ttl = settings.key_cache_ttl_seconds
        self._flush_every = settings.key_usage_flush_seconds
        self._default_limit = settings.default_rate_limit_per_minute
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._loading: dict[str, asyncio.Future[Principal | None]] = {}
        self._usage: dict[str, datetime] = {}
        self._flusher: asyncio.Task[None] | None = None
        signals.subscribe(self._on_signal)

    async def authenticate(self, value: str) -> Principal | None:
        """The principal for a key value (revoked keys included: the caller decides), or None."""
        if not looks_like_key(value):
            return None
        digest = hash_key(value)
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > time.monotonic():
            principal: Principal | None = cached[1]
        else:
            principal = await self._load(digest)
        if principal is not None and principal.key.revoked_at is None:
            self._usage[principal.key.id] = utcnow()
        return principal

    async def _load(self, digest: str) -> Principal | None:
        pending = self._loading.get(digest)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Principal | None] = asyncio.get_running_loop().create_future()
        self._loading[digest] = future
        try:
            started = time.monotonic()
            async with self._db.transaction(write=False) as conn:
                found = await repository.find_by_hash(conn, digest)
            principal = None
            if found is not None:
                key, org = found
                limit = org.rate_limit_per_minute or self._default_limit
                principal = Principal(key=key, organization=org, organization_limit=limit)
                # Expiry counts from before the read, so a revocation committed during it is seen next time.
                self._cache[digest] = (started + self._ttl, principal)
            else:
                self._cache.pop(digest, None)
            future.set_result(principal)
            return principal
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters get it through shield
            raise
        finally:
            del self._loading[digest]

    def _on_signal(self, topic: str, payload: str) -> None:
        if topic == KEY_REVOKED:
            self._cache.pop(payload, None)
        elif topic == ORG_UPDATED:
            for digest, (_, principal) in list(self._cache.items()):
                if principal.organization.id == payload:
                    self._cache.pop(digest, None)
        elif topic == RESET:
            self._cache.clear()

    def start(self) -> None:
        self._flusher = asyncio.create_task(self._flush_periodically(), name="threadline-key-usage")

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._flush_every)
            try:
                await self.flush_usage()
            except Exception:
                log.warning("could not record key usage; will retry", exc_info=True)

    async def flush_usage(self) -> None:
        used, self._usage = self._usage, {}
        if not used:
            return
        try:
            async with self._db.transaction() as conn:
                await repository.record_usage(conn, used)
        except BaseException:
            for key_id, at in used.items():
                self._usage.setdefault(key_id, at)
            raise

    async def aclose(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        try:
            await self.flush_usage()
        except Exception:
            log.warning("could not record key usage at shutdown", exc_info=True)


# The access middleware has already authenticated the request; these declare the schemes in the
# contract and hand the principal to handlers.
_bearer = HTTPBearer(
    auto_error=False, scheme_name="secretKey", description="`Authorization: Bearer sk_…` (secret key)."
)
_secret_header = APIKeyHeader(
    name="x-service-secret-key",
    auto_error=False,
    scheme_name="secretKeyHeader",
    description="`x-service-secret-key: sk_…`, the key guide's alternative form.",
)
_public_header = APIKeyHeader(
    name="x-service-key", auto_error=False, scheme_name="publicKey", description="`x-service-key: pk_…`."
)


def _principal(request: Request) -> Principal:
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(principal, Principal):  # pragma: no cover - the middleware guarantees it
        raise RuntimeError("route reached without authentication")
    return principal


def _secret_principal(
    request: Request,
    _bearer_form: Annotated[object, Depends(_bearer)],
    _header_form: Annotated[object, Depends(_secret_header)],
) -> Principal:
    return _principal(request)


def _public_principal(request: Request, _header: Annotated[object, Depends(_public_header)]) -> Principal:
    return _principal(request)


SecretKeyAuth = Annotated[Principal, Depends(_secret_principal)]
PublicKeyAuth = Annotated[Principal, Depends(_public_principal)]
