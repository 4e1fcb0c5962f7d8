"""Who is calling: key lookup with a short-lived cache (``access.principal`` says what a caller is).

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
from datetime import UTC, datetime

from threadline.access.principal import KEY_REVOKED, ORG_UPDATED, Principal
from threadline.config import Settings
from threadline.keys import repository
from threadline.keys.tokens import hash_key, looks_like_key
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.signals import RESET, SignalBus

log = logging.getLogger(__name__)


class KeyAuthenticator:
    def __init__(self, db: Database, signals: SignalBus, settings: Settings, clock: Clock) -> None:
        self._db = db
        self._clock = clock  # dates lastUsedAt (the cache's expiry measures on the monotonic clock)
        self._ttl = settings.key_cache_ttl_seconds
        self._flush_every = settings.key_usage_flush_seconds
        self._settings = settings
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._loading: dict[str, asyncio.Task[Principal | None]] = {}
        self._usage: dict[str, float] = {}  # POSIX seconds: a datetime per request costs 0.4 µs
        self._flusher: asyncio.Task[None] | None = None
        signals.subscribe(self._on_signal)

    async def authenticate(self, value: bytes) -> Principal | None:
        """The principal for a key value as sent (revoked keys included: the caller decides), or None."""
        digest = hash_key(value)
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > time.monotonic():
            principal: Principal | None = cached[1]
        elif looks_like_key(value):  # only a plausible key is worth a query
            principal = await self._load(digest)
        else:
            return None
        if principal is not None and principal.key.revoked_at is None:
            self._usage[principal.key.id] = self._clock.timestamp()
        return principal

    async def principal_of_hash(self, digest: str) -> Principal | None:
        """The principal of a key known by its hash, as ``authenticate`` finds it: a stream token names
        the key that minted it, and is refused as soon as that key is (same cache, same signals)."""
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > time.monotonic():
            principal: Principal | None = cached[1]
        else:
            principal = await self._load(digest)
        if principal is not None and principal.key.revoked_at is None:
            self._usage[principal.key.id] = self._clock.timestamp()
        return principal

    async def _load(self, digest: str) -> Principal | None:
        """One query per key however many requests miss at once. The query runs in a task of its own, so
        a waiter that is cancelled (a client gone, a shutdown) never fails the others."""
        task = self._loading.get(digest)
        if task is None:
            task = asyncio.create_task(self._fetch(digest), name="threadline-key-lookup")
            self._loading[digest] = task
            task.add_done_callback(lambda done: self._loaded(digest, done))
        return await asyncio.shield(task)

    def _loaded(self, digest: str, task: asyncio.Task[Principal | None]) -> None:
        if self._loading.get(digest) is task:
            del self._loading[digest]
        if not task.cancelled():
            task.exception()  # retrieved here too, in case every waiter was cancelled

    async def _fetch(self, digest: str) -> Principal | None:
        started = time.monotonic()
        async with self._db.transaction(write=False) as conn:
            found = await repository.KeysAcrossOrganizations(conn).find_by_hash(digest)
        if found is None:
            self._cache.pop(digest, None)
            return None
        key, org = found
        limits = org.limits(self._settings)
        principal = Principal(
            key=key,
            organization=org,
            organization_limit=limits.requests_per_minute,
            stream_limit=limits.streams,
        )
        # Expiry counts from before the read, so a revocation committed during it is seen next time.
        self._cache[digest] = (started + self._ttl, principal)
        return principal

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
                await repository.KeysAcrossOrganizations(conn).record_usage(
                    {key_id: datetime.fromtimestamp(at, UTC) for key_id, at in used.items()}
                )
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
