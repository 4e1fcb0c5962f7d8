"""One SQLAlchemy Core layer over both storage shapes.

PostgreSQL runs on SQLAlchemy's asyncio engine (asyncpg). SQLite runs on SQLAlchemy's plain engine, called
from the event loop through a thin async facade: an indexed SQLite statement takes tens of microseconds,
less than the machinery of the asyncio adapter around it (greenlets, a thread round trip per DBAPI call;
measured: a transaction with nothing in it cost 200 us that way, 40 us this way). What can wait runs on a
worker thread instead: ``BEGIN IMMEDIATE`` (it may wait for another process's write lock), the commit of a
write (it waits for the disk), and every statement of a ``long`` transaction (full-text search; SQLite
releases the GIL while it works, so it runs beside the loop).

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
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

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

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
_WRITE_OPTION = "threadline_write"
_AFTER_COMMIT = "threadline_after_commit"
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
            raise ValueError("naive datetimes are not stored; use kit.clock.utcnow()")
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


class PlainQuery:
    """A fixed statement, compiled once per dialect and run alone through the driver (``Database.read``).

    For the hottest reads (``GET /v1/threads``): SQLAlchemy's per-execution work (the statement's cache
    key, the execution context, a type processor per value: a regular expression per SQLite datetime)
    measured more than the query itself. Rows come back as the driver returns them; read times with
    ``stored_isoformat`` and JSON with ``stored_json``. Parameters are ``bindparam`` names, passed as the
    driver takes them (no bind processing: plain strings and numbers only)."""

    def __init__(self, statement: sa.Select[Any]) -> None:
        self._statement = statement
        # Per dialect: the SQL, its parameters' names in order, and the values the compiler fixed itself
        # (SQLite writes ``LIMIT ? OFFSET ?`` with the offset bound to 0).
        self._compiled: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {}

    def bind(self, dialect: Dialect, parameters: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """The SQL for ``dialect`` and its positional parameters."""
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            statement = self._statement.compile(dialect=dialect)
            names = tuple(statement.positiontup or ())
            compiled = self._compiled[dialect.name] = (str(statement), names, dict(statement.params))
        sql, names, fixed = compiled
        return sql, tuple([parameters[name] if name in parameters else fixed[name] for name in names])


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


async def _connect_to_the_end(*args: Any, **kwargs: Any) -> Any:
    """``asyncpg.connect``, seen to its end even if the caller is cancelled meanwhile (a task stopped at
    shutdown while the pool opened a connection for it): asyncpg cancelled halfway leaves the future of its
    SSL negotiation failed with a ``ConnectionError`` nobody retrieves, which asyncio reports as lost. The
    connection the caller no longer wants is closed."""
    connecting = asyncio.ensure_future(asyncpg.connect(*args, **kwargs))
    try:
        return await asyncio.shield(connecting)
    except asyncio.CancelledError:
        connecting.add_done_callback(_close_unwanted)
        raise


def _close_unwanted(connecting: asyncio.Future[Any]) -> None:
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
                if write:
                    connection = connection.execution_options(**{_WRITE_OPTION: True})
                    transaction = await _in_thread(connection.begin)
                else:
                    transaction = connection.begin()
                connection.info[_AFTER_COMMIT] = callbacks
                try:
                    yield _SqliteConnection(connection, long)
                except BaseException:
                    transaction.rollback()
                    raise
                if write:
                    await _in_thread(transaction.commit)
                else:
                    transaction.commit()
            finally:
                connection.info.pop(_AFTER_COMMIT, None)
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
            await self._async_engine.dispose()


class GroupCommit(Generic[T, R]):
    """Concurrent writes of one kind, many requests to one transaction.

    A request submits its item and waits; the committer writes every item that arrived while the previous
    commit was running, in one transaction, then answers all of their requests at once. The first item on
    an idle committer is written at once (no timer); under load each commit carries more items, so the cost
    of making them durable (``BEGIN IMMEDIATE`` and an fsync on SQLite, a round trip and a WAL flush on
    PostgreSQL) is shared instead of paid per request. ``submit`` returns only after the item's transaction
    has committed, so a request answered 2xx is durable whatever happens to the process next.

    Groups are taken in submission order, and items in a group are written in that order. A group weighs
    at most ``max_weight`` (items weigh 1 unless ``weigh`` says otherwise: an intake request weighs its
    records), but always holds at least one item. A group that fails because of its data
    (``IntegrityError``, ``DataError``: a row the database refuses) is retried item by item, so one
    request's bad data never fails the others; any other failure fails the group.

    ``write`` may return something about what it wrote (the log writer: the records a watch wanted, with
    their ids); ``committed`` receives it on the event loop once the transaction has committed, before the
    requests are answered. Its failures are logged: the data is committed either way.

    This is the one exception to "the request's session commits": the committer owns its transactions, so
    a request that uses it must not also hold a write transaction of its own (it would wait for itself).
    ``write_async`` instead of ``write``: the group is handed to something that commits it elsewhere (the
    log writer's store process on SQLite, ``telemetry.log_store``), awaited on the event loop while this
    process's turn to write is held (``Database.write_turn``), so no thread of ours competes with the loop
    for the interpreter while it waits. It must commit or raise; failures are handled as above.
    """

    _TURN_SECONDS = 0.05

    def __init__(
        self,
        db: Database,
        write: Callable[[Connection, Sequence[T]], R] | None = None,
        *,
        write_async: Callable[[Sequence[T]], Awaitable[R]] | None = None,
        name: str,
        committed: Callable[[Sequence[T], R], None] | None = None,
        weigh: Callable[[T], int] | None = None,
        max_weight: int = 1000,
    ) -> None:
        """``write`` runs inside the group's transaction, on a worker thread on SQLite: plain, short and
        synchronous (the process's other writers wait for it). Exactly one of ``write`` and
        ``write_async`` is given."""
        if (write is None) == (write_async is None):
            raise TypeError("GroupCommit takes exactly one of write and write_async")
        self._db = db
        self._write = write
        self._write_async = write_async
        self._committed = committed
        self._weigh = weigh
        self._max_weight = max_weight
        self._name = name
        self._pending: deque[tuple[T, asyncio.Future[None]]] = deque()  # appended on the loop
        self._lock = threading.Lock()  # ... taken by the committing thread
        self._flusher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the flusher's, while there is one

    async def submit(self, item: T) -> None:
        """Returns once ``item`` is committed; raises what its transaction raised if it was not. A caller
        that goes away cancels only its own wait: the item was queued and is committed anyway."""
        await self.enqueue(item)

    def enqueue(self, item: T) -> asyncio.Future[None]:
        """``submit`` for a caller that awaits the future itself, which it must do at once: the intake
        waits there, a few coroutine frames shallower (each frame is paid again when the commit wakes
        the request)."""
        # While a flusher runs, the running loop is its loop: no ``asyncio.get_running_loop()``, which on
        # Python 3.11 makes a getpid() system call each time (one per request under load, measured with
        # strace on the intake; python/cpython#100363 dropped the check in 3.12).
        loop = self._loop
        if loop is None or self._flusher is None:
            loop = asyncio.get_running_loop()
        # No done-callback to mark failures as seen: a caller that goes away cancels this future (its
        # ``await`` does), and ``_fail`` skips futures already done; one cancelled after its failure was
        # set retrieves it on waking. One callback fewer to schedule per request on the intake's path.
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._pending.append((item, future))
        if self._flusher is None:
            self._loop = loop
            self._flusher = loop.create_task(self._flush(), name=f"threadline-group-commit-{self._name}")
        return future

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                try:
                    if self._write_async is not None:
                        async with self._db.write_turn():
                            await self._drain_async()
                    else:
                        await self._db.write_session(lambda connection: self._drain(connection, loop))
                except Exception as exc:  # no connection at all: everyone waiting hears it
                    with self._lock:
                        waiting, self._pending = list(self._pending), deque()
                    _fail(waiting, exc)
        finally:
            self._flusher = None

    def _drain(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        """On SQLite this runs on a worker thread: a group arriving while the previous one commits goes
        next without waiting for a turn of the event loop."""
        for group in self._turn():
            self._commit(connection, group, loop)

    async def _drain_async(self) -> None:
        for group in self._turn():
            await self._commit_async(group)

    def _turn(self) -> Iterator[list[tuple[T, asyncio.Future[None]]]]:
        """Groups back to back until nothing is pending or the turn has lasted ``_TURN_SECONDS`` (other
        writers of the process wait for the turn)."""
        deadline = time.monotonic() + self._TURN_SECONDS
        while time.monotonic() < deadline:
            with self._lock:
                group = self._take_group()
            if not group:
                return
            yield group

    def _take_group(self) -> list[tuple[T, asyncio.Future[None]]]:
        pending, weigh = self._pending, self._weigh
        if weigh is None:
            return [pending.popleft() for _ in range(min(len(pending), self._max_weight))]
        group: list[tuple[T, asyncio.Future[None]]] = []
        weight = 0
        while pending:
            next_weight = weight + weigh(pending[0][0])
            if group and next_weight > self._max_weight:
                break
            weight = next_weight
            group.append(pending.popleft())
        return group

    def _commit(
        self,
        connection: Connection,
        group: list[tuple[T, asyncio.Future[None]]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        assert self._write is not None
        items = [item for item, _ in group]
        try:
            with connection.begin():
                result = self._write(connection, items)
        except Exception as exc:
            if _data_refused(exc) and len(group) > 1:
                for one in group:
                    self._commit(connection, [one], loop)
            else:
                loop.call_soon_threadsafe(_fail, group, exc)
            return
        loop.call_soon_threadsafe(self._succeed, group, items, result)

    async def _commit_async(self, group: list[tuple[T, asyncio.Future[None]]]) -> None:
        """``_commit``'s twin for ``write_async``, on the loop."""
        assert self._write_async is not None
        items = [item for item, _ in group]
        try:
            result = await self._write_async(items)
        except Exception as exc:
            if _data_refused(exc) and len(group) > 1:
                for one in group:
                    await self._commit_async([one])
            else:
                _fail(group, exc)
            return
        self._succeed(group, items, result)

    def _succeed(self, group: list[tuple[T, asyncio.Future[None]]], items: list[T], result: R) -> None:
        if self._committed is not None:
            try:
                self._committed(items, result)
            except Exception:  # the items are committed either way
                log.exception("after the commit of %s", self._name)
        for _, future in group:
            if not future.done():
                future.set_result(None)

    async def aclose(self) -> None:
        """Finish what was accepted: every waiting request gets its answer before the process ends."""
        while self._flusher is not None:
            await asyncio.shield(self._flusher)


def _data_refused(exc: Exception) -> bool:
    """The data's fault, not the database's: retried item by item so one request's rows fail alone."""
    return isinstance(exc, sa.exc.IntegrityError | sa.exc.DataError)


def _fail(group: Sequence[tuple[Any, asyncio.Future[None]]], exc: BaseException) -> None:
    for _, future in group:
        if not future.done():
            future.set_exception(exc)


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
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        dbapi_connection = conn.connection.dbapi_connection
        assert dbapi_connection is not None
        dbapi_connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
