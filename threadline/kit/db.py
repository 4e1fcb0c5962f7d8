"""One SQLAlchemy Core layer over both storage shapes.

PostgreSQL runs on SQLAlchemy's asyncio engine (asyncpg). SQLite runs on SQLAlchemy's plain engine, called
from the event loop through a thin async facade: an indexed SQLite statement takes tens of microseconds,
less than the machinery of the asyncio adapter around it (greenlets, a thread round trip per DBAPI call;
measured: a transaction with nothing in it cost 200 us that way, 40 us this way). What can wait runs on a
worker thread instead: ``BEGIN IMMEDIATE`` when another process holds the write lock (taken on the loop
when it is free, as it nearly always is), the commit of a transaction that wrote (it waits for the disk),
and every statement of a ``long`` transaction (full-text search; SQLite releases the GIL while it works,
so it runs beside the loop). Each trip to a thread is a round trip through the loop, which on a loaded
machine costs more than the statements: a run's first event paid four of them before 2026-11-26.

SQLite also needs WAL and durability pragmas on every connection, and write transactions that take the
write lock up front (``BEGIN IMMEDIATE``): a deferred transaction that reads and then writes can fail with
SQLITE_BUSY at the upgrade, which ``busy_timeout`` does not retry. Writers of this process queue on an
asyncio lock before that, because SQLite makes a blocked writer sleep and poll. Reads stay deferred and
never wait for a writer (WAL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import asyncpg
import sqlalchemy as sa
from pydantic_core import from_json
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, CursorResult, Dialect, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.base import Executable

from threadline.kit import sqlite
from threadline.kit.clock import isoformat
from threadline.kit.plain_query import PlainQuery

log = logging.getLogger(__name__)

T = TypeVar("T")
_WRITE_OPTION = "threadline_write"
_AFTER_COMMIT = "threadline_after_commit"
_BEGUN = "threadline_begun"  # SQLite: BEGIN IMMEDIATE already sent on the driver (``_sqlite_transaction``)
AfterCommit = Callable[[], Awaitable[None]]


class Conn(Protocol):
    """What repositories use of a connection, whichever engine serves it."""

    @property
    def info(self) -> dict[Any, Any]: ...

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult[Any]: ...


def after_commit(conn: Conn, callback: AfterCommit) -> None:
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
            raise ValueError("naive datetimes are not stored; use the services' clock (kit.clock.Clock)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JsonType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def stored_isoformat(value: datetime | str) -> str:
    """A ``UtcDateTime`` column as the driver returns it (a ``PlainQuery``), written as ``isoformat``
    writes the datetime: SQLite hands back the naive UTC text SQLAlchemy stored (``YYYY-MM-DD
    HH:MM:SS.ffffff``), which is cut rather than parsed; PostgreSQL an aware datetime."""
    if isinstance(value, str):
        if len(value) == 26 and value[10] == " " and value[19] == ".":
            return f"{value[:10]}T{value[11:23]}Z"
        value = datetime.fromisoformat(value)
    return isoformat(value)


def stored_json(value: Any) -> Any:
    """A ``JsonType`` column as the driver returns it: JSON text (SQLite), or already decoded."""
    return from_json(value) if isinstance(value, str | bytes) else value


async def _in_thread(function: Callable[[], T]) -> T:
    """Run ``function`` on a worker thread and see it finish even if the caller is cancelled meanwhile:
    the connection it uses must not be touched again until it has."""
    future = asyncio.get_running_loop().run_in_executor(None, function)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await future
        raise


# Connects whose caller was cancelled, still finishing: held here (asyncio keeps only weak references to
# tasks) until they end, and awaited by ``Database.dispose`` so none is cut off halfway at shutdown.
_ABANDONED_CONNECTS: set[asyncio.Future[Any]] = set()
_ABANDONED_CONNECT_WAIT_SECONDS = 5.0


async def _connect_to_the_end(*args: Any, **kwargs: Any) -> Any:
    """``asyncpg.connect``, seen to its end even if the caller is cancelled meanwhile (a task stopped at
    shutdown while the pool opened a connection for it): asyncpg cancelled halfway leaves the future of its
    SSL negotiation failed with a ``ConnectionError`` nobody retrieves, which asyncio reports as lost. The
    connection the caller no longer wants is closed."""
    connecting = asyncio.ensure_future(asyncpg.connect(*args, **kwargs))
    try:
        return await asyncio.shield(connecting)
    except asyncio.CancelledError:
        _ABANDONED_CONNECTS.add(connecting)
        connecting.add_done_callback(_close_unwanted)
        raise


def _close_unwanted(connecting: asyncio.Future[Any]) -> None:
    _ABANDONED_CONNECTS.discard(connecting)
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().terminate()


class _SqliteConnection:
    """The async face of a plain SQLAlchemy connection (see the module docstring)."""

    def __init__(self, connection: Connection, long: bool) -> None:
        self._connection = connection
        self._long = long

    @property
    def info(self) -> dict[Any, Any]:
        return self._connection.info

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult[Any]:
        if not self._long:
            return self._connection.execute(statement, parameters)
        return await _in_thread(lambda: self._connection.execute(statement, parameters))


class Database:
    _SQLITE_POOL = 16

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self.sqlite_path: Path | None = None
        self._async_engine: AsyncEngine | None = None
        self._sync_engine: Engine | None = None
        if self.is_sqlite:
            path = make_url(url).database or ""
            self.sqlite_path = Path(path)
            self._sync_engine = sa.create_engine(
                f"sqlite:///{path}",
                pool_size=self._SQLITE_POOL,
                max_overflow=0,
                pool_reset_on_return=None,
                connect_args={"isolation_level": None, "check_same_thread": False, "timeout": 10},
                hide_parameters=True,  # an error's text never carries the values (tenant data) it bound
            )
            _install_sqlite_hooks(self._sync_engine)
            # Never wait for a pooled connection on the loop: a slot is awaited first.
            self._slots = asyncio.Semaphore(self._SQLITE_POOL)
            self._writers = asyncio.Lock()
        else:
            self._async_engine = create_async_engine(
                url,
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_pre_ping=True,
                hide_parameters=True,
                # Read (and removed) by SQLAlchemy's asyncpg adapter: the function it connects with.
                connect_args={"async_creator_fn": _connect_to_the_end},
            )

    @property
    def dialect_name(self) -> str:
        engine = self._sync_engine or self._async_engine
        assert engine is not None
        return engine.dialect.name

    @asynccontextmanager
    async def transaction(self, *, write: bool = True, long: bool = False) -> AsyncIterator[Conn]:
        """Commit on normal exit, roll back on any exception; the only place a transaction ends.

        ``long``: the transaction runs queries that may take milliseconds (full-text search)."""
        callbacks: list[AfterCommit] = []
        if self._sync_engine is not None:
            async with self._sqlite_transaction(write, long, callbacks) as conn:
                yield conn
        else:
            assert self._async_engine is not None
            async with self._async_engine.connect() as connection:
                # Kept by reference: reading ``connection.info`` again after a cancelled query would try
                # to revalidate the connection, and that error would replace the cancellation.
                info = connection.info
                info[_AFTER_COMMIT] = callbacks
                try:
                    async with connection.begin():
                        yield connection
                finally:
                    info.pop(_AFTER_COMMIT, None)
        # After the commit and after the writer queue is released: callbacks may write themselves.
        for callback in callbacks:
            try:
                await callback()
            except Exception:
                log.exception("after-commit callback failed")

    @asynccontextmanager
    async def _sqlite_transaction(
        self, write: bool, long: bool, callbacks: list[AfterCommit]
    ) -> AsyncIterator[Conn]:
        assert self._sync_engine is not None
        queue = self._writers if write else contextlib.nullcontext()
        async with queue, self._slots:
            connection = self._sync_engine.connect()
            try:
                driver: Any = connection.connection.dbapi_connection
                if not write:
                    transaction = connection.begin()
                elif sqlite.begin_immediate_now(driver):
                    connection = connection.execution_options(**{_WRITE_OPTION: True})
                    connection.info[_BEGUN] = True  # the begin hook emits nothing
                    transaction = connection.begin()
                else:  # another process writes: wait for its lock off the loop
                    connection = connection.execution_options(**{_WRITE_OPTION: True})
                    transaction = await _in_thread(connection.begin)
                changes = driver.total_changes
                connection.info[_AFTER_COMMIT] = callbacks
                try:
                    yield _SqliteConnection(connection, long)
                except BaseException:
                    transaction.rollback()
                    raise
                # A commit that writes waits for the disk, off the loop. One that changed no row (a claim
                # that found nothing to claim) only releases the lock: no thread round trip for it.
                if driver.total_changes != changes:
                    await _in_thread(transaction.commit)
                else:
                    transaction.commit()
            finally:
                connection.info.pop(_AFTER_COMMIT, None)
                connection.info.pop(_BEGUN, None)
                connection.close()

    async def read(self, query: PlainQuery, parameters: Mapping[str, Any]) -> list[Any]:
        """The rows of one ``PlainQuery``, run alone, outside any request transaction.

        A single statement sees one snapshot by itself (SQLite in autocommit mode, PostgreSQL's statement
        snapshot), so a read that is one query needs no transaction around it: on SQLite it runs on a pooled
        driver connection without SQLAlchemy's connection, ``BEGIN`` and ``COMMIT`` (measured ~120 us of
        CPU per request in place, plus ~70 us of FastAPI's generator dependency for ``ConnDep``)."""
        if self._sync_engine is not None:
            sql, values = query.bind(self._sync_engine.dialect, parameters)
            async with self._slots:
                pooled = self._sync_engine.raw_connection()
                try:
                    cursor = pooled.driver_connection.execute(sql, values)  # type: ignore[union-attr]
                    rows: list[Any] = cursor.fetchall()
                except sqlite3.Error as exc:  # as SQLAlchemy raises it (OperationalError, ...)
                    raise sa.exc.DBAPIError.instance(sql, values, exc, sqlite3.Error) from exc
                finally:
                    pooled.close()
            return rows
        assert self._async_engine is not None
        sql, values = query.bind(self._async_engine.dialect, parameters)
        async with self._async_engine.connect() as connection:
            return list((await connection.exec_driver_sql(sql, values)).all())

    async def write_session(self, function: Callable[[Connection], T]) -> T:
        """``function`` with a plain connection, holding this process's turn to write; it opens and commits
        its own transactions (``with connection.begin():``, which is ``BEGIN IMMEDIATE`` on SQLite).

        For hot write paths: on SQLite the whole session runs in one trip to a worker thread instead of
        one per step (begin, statements, commit); under load every trip waits for a turn of the event loop,
        which measured longer than the transaction itself. Keep sessions short: the process's other
        writers wait for them. On PostgreSQL ``function`` runs through the asyncio engine's ``run_sync``."""
        if self._sync_engine is not None:
            engine = self._sync_engine

            def run() -> T:
                with engine.connect() as plain:
                    return function(plain.execution_options(**{_WRITE_OPTION: True}))

            async with self._writers, self._slots:
                return await _in_thread(run)
        assert self._async_engine is not None
        async with self._async_engine.connect() as connection:
            return await connection.run_sync(function)

    @asynccontextmanager
    async def write_turn(self) -> AsyncIterator[None]:
        """This process's turn to write, held by a writer that commits through something else (the log
        store process): on SQLite the queue every write transaction of this process waits in, so none of
        them competes with it for SQLite's write lock. Nothing to hold on PostgreSQL."""
        if self._sync_engine is None:
            yield
            return
        async with self._writers:
            yield

    async def run_sync(self, function: Callable[[Connection], T]) -> T:
        """``function`` with a plain connection in a committed transaction (migrations, inspection)."""
        if self._sync_engine is not None:
            engine = self._sync_engine

            def run() -> T:
                with engine.begin() as connection:
                    return function(connection)

            return await _in_thread(run)
        assert self._async_engine is not None
        async with self._async_engine.begin() as connection:
            return await connection.run_sync(function)

    async def ping(self) -> None:
        await self.run_sync(lambda connection: connection.execute(sa.text("SELECT 1")).scalar_one())

    async def dispose(self) -> None:
        if self._sync_engine is not None:
            self._sync_engine.dispose()
        if self._async_engine is not None:
            if _ABANDONED_CONNECTS:  # bounded: asyncpg's own connect timeout is a minute
                await asyncio.wait(set(_ABANDONED_CONNECTS), timeout=_ABANDONED_CONNECT_WAIT_SECONDS)
            await self._async_engine.dispose()


def _install_sqlite_hooks(engine: Engine) -> None:
    sqlite.bind_none_fast()

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # The driver connects in autocommit mode (isolation_level=None): the "begin" hook emits BEGIN.
        sqlite.configure(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Straight to the driver: through SQLAlchemy's execution machinery this one statement measured
        # 70 us, most of a short read transaction (the driver alone: 2 us).
        if conn.info.pop(_BEGUN, False):
            return
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        dbapi_connection = conn.connection.dbapi_connection
        assert dbapi_connection is not None
        dbapi_connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
