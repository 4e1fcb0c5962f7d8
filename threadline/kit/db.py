"""One SQLAlchemy Core layer over both storage shapes.

SQLite needs two things PostgreSQL does not: WAL and durability pragmas on every connection, and write
transactions that take the write lock up front (``BEGIN IMMEDIATE``). A deferred transaction that reads and
then writes can fail with SQLITE_BUSY at the upgrade, which ``busy_timeout`` does not retry; taking the lock
first makes writers queue instead. Reads stay deferred so they never wait for a writer (WAL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from threadline.kit import sqlite_driver

log = logging.getLogger(__name__)

_WRITE_OPTION = "threadline_write"
_AFTER_COMMIT = "threadline_after_commit"
AfterCommit = Callable[[], Awaitable[None]]


def after_commit(conn: AsyncConnection, callback: AfterCommit) -> None:
    """Run ``callback`` once the current transaction has committed (never if it rolls back).

    For telling other processes about a change: announced earlier, they could re-read the old row."""
    conn.info[_AFTER_COMMIT].append(callback)


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """Timezone-aware UTC in and out, whatever the dialect keeps (SQLite has no time zones)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; use kit.clock.utcnow()")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JsonType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


class Database:
    """SQLite (embedded: one process) and PostgreSQL behind one interface.

    On SQLite, writers are queued by an asyncio lock before they take SQLite's write lock: SQLite itself
    makes a blocked writer sleep and poll (``busy_timeout``), which under load turns into tens or hundreds
    of milliseconds of latency. The pool is fixed-size: every aiosqlite connection is a thread, and an
    overflow connection opened and closed per burst costs far more than waiting for a pooled one."""

    _SQLITE_POOL = 16

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any]
        if self.is_sqlite:
            kwargs = {
                "pool_size": self._SQLITE_POOL,
                "max_overflow": 0,
                "pool_reset_on_return": None,
                "async_creator": sqlite_driver.creator(make_url(url).database or ""),
            }
        else:
            kwargs = {"pool_size": pool_size, "max_overflow": pool_size, "pool_pre_ping": True}
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        self._writers = asyncio.Lock() if self.is_sqlite else None
        if self.is_sqlite:
            _install_sqlite_hooks(self.engine)

    @asynccontextmanager
    async def transaction(self, *, write: bool = True, long: bool = False) -> AsyncIterator[AsyncConnection]:
        """Commit on normal exit, roll back on any exception; the only place a transaction ends.

        ``long``: the transaction runs queries that may take milliseconds (full-text search); on SQLite
        they then run on a worker thread instead of the event loop (see ``sqlite_driver``)."""
        queue = self._writers if write and self._writers is not None else contextlib.nullcontext()
        callbacks: list[AfterCommit] = []
        async with queue, self.engine.connect() as conn:
            if write:
                await conn.execution_options(**{_WRITE_OPTION: True})
            if long and self.is_sqlite:
                driver = cast(sqlite_driver.Connection, (await conn.get_raw_connection()).driver_connection)
                driver.inline = False  # reset below: the pooled connection goes back inline
            conn.info[_AFTER_COMMIT] = callbacks
            try:
                async with conn.begin():
                    yield conn
            finally:
                conn.info.pop(_AFTER_COMMIT, None)
                if long and self.is_sqlite:
                    driver.inline = True
        # After the commit and after the writer queue is released: callbacks may write themselves.
        for callback in callbacks:
            try:
                await callback()
            except Exception:
                log.exception("after-commit callback failed")

    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # The driver connects in autocommit mode (sqlite_driver.creator): the "begin" hook emits BEGIN.
        cursor = dbapi_connection.cursor()
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=FULL",
            "PRAGMA foreign_keys=ON",
            "PRAGMA busy_timeout=10000",
        ):
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
