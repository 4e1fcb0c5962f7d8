"""The long-lived parts of a process, opened once at start-up and closed once at shutdown.

Backends are chosen here, from configuration, and nowhere else: a Redis URL switches the rate limiter and
the signal bus to their Redis implementations; the database URL picks the SQL dialect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import sqlalchemy as sa
from redis.asyncio import Redis
from redis.exceptions import RedisError

from threadline.config import Settings
from threadline.keys.auth import KeyAuthenticator
from threadline.kit.db import Database
from threadline.kit.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from threadline.kit.signals import MemorySignalBus, RedisSignalBus, SignalBus
from threadline.search.backend import SearchBackend, backend_for
from threadline.telemetry.tail import LogTails
from threadline.telemetry.writer import LogWriter

# Failures of a backend (as opposed to bugs): answered 503 where a request depends on them.
BACKEND_ERRORS: tuple[type[BaseException], ...] = (
    RedisError,
    OSError,
    TimeoutError,
    sa.exc.OperationalError,
    sa.exc.InterfaceError,
)


@dataclass(slots=True)
class Services:
    settings: Settings
    db: Database
    redis: Redis | None
    limiter: RateLimiter
    signals: SignalBus
    authenticator: KeyAuthenticator
    search: SearchBackend
    logs: LogWriter
    log_tails: LogTails

    async def check_ready(self) -> None:
        await self.db.ping()
        if self.redis is not None:
            await self.redis.ping()


class Runtime:
    """A holder the app and its middleware share before the services exist (they open in the lifespan)."""

    def __init__(self) -> None:
        self._services: Services | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("services are not open: the application's lifespan has not started")
        return self._services

    @services.setter
    def services(self, value: Services | None) -> None:
        self._services = value


def connect_redis(settings: Settings) -> Redis | None:
    if settings.redis_url is None:
        return None
    return Redis.from_url(settings.redis_url.get_secret_value(), decode_responses=True)


@asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[Services]:
    db = Database(settings.resolved_database_url)
    redis = connect_redis(settings)
    limiter: RateLimiter
    signals: SignalBus
    if redis is not None:
        limiter = RedisRateLimiter(redis, settings.redis_prefix)
        signals = RedisSignalBus(redis, settings.redis_prefix)
    else:
        limiter = MemoryRateLimiter()
        signals = MemorySignalBus()
    authenticator = KeyAuthenticator(db, signals, settings)
    logs = LogWriter(db, signals)
    log_tails = LogTails(signals)
    try:
        await signals.start()
        authenticator.start()
        search = backend_for(db.dialect_name)
        yield Services(settings, db, redis, limiter, signals, authenticator, search, logs, log_tails)
    finally:
        log_tails.close()
        await logs.aclose()
        await authenticator.aclose()
        await signals.aclose()
        await limiter.aclose()
        if redis is not None:
            await redis.aclose()
        await db.dispose()
