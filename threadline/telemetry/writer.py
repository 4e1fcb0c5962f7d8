"""Group commit: many intake requests, one transaction.

A request hands its decoded rows to the writer and waits; the writer commits everything that arrived while
the previous commit was running, in one transaction, then answers every waiter at once. The first request
on an idle writer is committed at once (no timer), and under load each commit carries more rows, so the
cost of making data durable (one fsync on SQLite) is shared instead of paid per request. 202 is sent only
after the commit, so an answered request is on disk, whatever happens to the process next.

A group that fails because of its data (a foreign key: a project deleted a moment ago; a value the
database refuses) is retried request by request, so one request's data never fails the others. Every
commit announces the organizations it wrote for, which wakes the live tails (``telemetry.tail``), and hands
the records a ``RecordWatch`` picked out (log-triggered automations) back to it with their ids.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from threadline.kit.clock import isoformat
from threadline.kit.db import Database
from threadline.kit.ids import id_time_ms, ids_after
from threadline.kit.signals import SignalBus
from threadline.telemetry.decoding import Row
from threadline.telemetry.tables import log_records, log_sequence

log = logging.getLogger(__name__)

LOGS_APPENDED = "logs.appended"
ID_PREFIX = "log"
_MAX_GROUP_ROWS = 20_000
_TURN_SECONDS = 0.05


class RecordWatch(Protocol):
    """Something that wants to hear of certain records once they are committed."""

    def match(self, rows: Sequence[Row]) -> list[tuple[Any, int]]:
        """Before the commit, on the request's path (so: cheap): the rows wanted, as (tag, index)."""
        ...

    def persist(self, connection: Connection, hits: list[tuple[Any, dict[str, Any]]]) -> None:
        """Inside the records' own transaction (on the writer's thread): each tag with its record, id
        included, to be written with them."""
        ...

    def committed(self, hits: list[tuple[Any, dict[str, Any]]]) -> None:
        """After the commit, on the loop: the same hits."""
        ...


@dataclass(slots=True)
class _Waiter:
    """One request's records, already in the form the insert takes (see ``append``)."""

    rows: list[Any]
    organizations: frozenset[str]
    future: asyncio.Future[None]
    # What the watch picked: (tag, the row as decoded, the same row as prepared for the insert).
    watched: list[tuple[Any, Row, Any]]


class LogWriter:
    def __init__(self, db: Database, signals: SignalBus, watch: RecordWatch | None = None) -> None:
        self._db = db
        self._signals = signals
        self._watch = watch
        self._pending: deque[_Waiter] = deque()  # appended on the loop, taken by the writing thread
        self._lock = threading.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._announcing: set[asyncio.Task[None]] = set()
        self._sqlite = db.dialect_name == "sqlite"

    async def write(self, rows: list[Row]) -> None:
        """Returns once ``rows`` are committed (they get their ids and ``received_at`` then)."""
        if not rows:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        organizations = frozenset(row["organization_id"] for row in rows)
        # Prepared here, outside the write lock: only ids, the insert and the commit are serialized.
        prepared: list[Any] = _sqlite_parameters(rows) if self._sqlite else rows
        watched = []
        if self._watch is not None:
            watched = [(tag, rows[index], prepared[index]) for tag, index in self._watch.match(rows)]
        with self._lock:
            self._pending.append(_Waiter(prepared, organizations, future, watched))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush(), name="threadline-log-writer")
        # A request that goes away cancels only its own wait: its rows are queued and are committed anyway.
        await future

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                try:
                    await self._db.write_session(lambda connection: self._drain(connection, loop))
                except Exception as exc:  # no connection at all: everyone waiting hears it (503)
                    with self._lock:
                        waiting, self._pending = list(self._pending), deque()
                    _fail(waiting, exc)
        finally:
            self._flusher = None

    def _drain(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        """Commit groups back to back, each in its own transaction, until nothing is pending or the turn
        has lasted ``_TURN_SECONDS`` (the process's other writers wait for it). Runs off the event loop on
        SQLite: a group arriving while the previous one commits goes next without waiting for the loop."""
        deadline = time.monotonic() + _TURN_SECONDS
        while time.monotonic() < deadline:
            with self._lock:
                group = self._take_group()
            if not group:
                return
            self._commit(connection, group, loop)

    def _take_group(self) -> list[_Waiter]:
        group: list[_Waiter] = []
        size = 0
        while self._pending and (not group or size + len(self._pending[0].rows) <= _MAX_GROUP_ROWS):
            waiter = self._pending.popleft()
            group.append(waiter)
            size += len(waiter.rows)
        return group

    def _commit(self, connection: Connection, group: list[_Waiter], loop: asyncio.AbstractEventLoop) -> None:
        hits: list[tuple[Any, dict[str, Any]]] = []
        try:
            with connection.begin():
                append(connection, [row for waiter in group for row in waiter.rows])
                hits = [
                    (tag, _record(row, prepared)) for waiter in group for tag, row, prepared in waiter.watched
                ]
                if hits and self._watch is not None:
                    self._watch.persist(connection, hits)
        except (sa.exc.IntegrityError, sa.exc.DataError) as exc:  # the data's fault, not the database's
            if len(group) == 1:
                loop.call_soon_threadsafe(_fail, group, exc)
                return
            for waiter in group:  # one request's problem must not fail the others
                self._commit(connection, [waiter], loop)
            return
        except Exception as exc:
            loop.call_soon_threadsafe(_fail, group, exc)
            return
        loop.call_soon_threadsafe(self._committed, group, hits)

    def _committed(self, group: list[_Waiter], hits: list[tuple[Any, dict[str, Any]]]) -> None:
        for waiter in group:
            if not waiter.future.done():
                waiter.future.set_result(None)
        if hits and self._watch is not None:
            try:
                self._watch.committed(hits)
            except Exception:  # the records are committed either way
                log.exception("a record watch failed")
        announce = asyncio.create_task(self._announce(frozenset().union(*(w.organizations for w in group))))
        self._announcing.add(announce)
        announce.add_done_callback(self._announcing.discard)

    async def _announce(self, organizations: frozenset[str]) -> None:
        for organization_id in organizations:
            try:
                await self._signals.publish(LOGS_APPENDED, organization_id)
            except Exception:  # a tail falls back to polling; the rows are committed either way
                log.warning("could not announce new log records", exc_info=True)

    async def aclose(self) -> None:
        """Finish what was accepted: every waiting request gets its answer before the process ends."""
        while self._flusher is not None:
            await asyncio.shield(self._flusher)


def append(connection: Connection, rows: list[Any]) -> None:
    """Give ``rows`` ids after the last committed one (locking the sequence row) and insert them. Runs
    inside the caller's write transaction (``Database.write_session``). ``rows``: on SQLite, parameter lists
    from ``_sqlite_parameters``; on PostgreSQL, row dicts."""
    # FOR UPDATE on PostgreSQL; SQLite renders nothing for it (its write lock is held already).
    query = sa.select(log_sequence.c.last_id).where(log_sequence.c.id == 1).with_for_update()
    last_id = connection.execute(query).scalar_one_or_none()
    ids = ids_after(ID_PREFIX, last_id, len(rows))
    received_at = datetime.fromtimestamp(id_time_ms(ID_PREFIX, ids[0]) / 1000, UTC)
    if connection.dialect.name == "sqlite":
        received_text = _sqlite_time(received_at)
        for parameters, row_id in zip(rows, ids, strict=True):
            parameters[_ID_SLOT] = row_id
            parameters[_RECEIVED_SLOT] = received_text
        cursor = connection.connection.cursor()  # the driver's own
        try:
            for start in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[start : start + _ROWS_PER_INSERT]
                cursor.execute(_sqlite_insert(len(chunk)), list(itertools.chain.from_iterable(chunk)))
        except sqlite3.Error as exc:  # as SQLAlchemy would have raised it (IntegrityError, ...)
            raise sa.exc.DBAPIError.instance(_sqlite_insert(1), None, exc, sqlite3.Error) from exc
        finally:
            cursor.close()
    else:
        for row, row_id in zip(rows, ids, strict=True):
            row["id"] = row_id
            row["received_at"] = received_at
        connection.execute(log_records.insert(), rows)
    connection.execute(log_sequence.update().where(log_sequence.c.id == 1).values(last_id=ids[-1]))


# SQLite's bulk path hands parameter lists to the driver: SQLAlchemy's per-row parameter processing (type
# decorators, JSON) measured 15 us a row, twice the cost of the insert itself. The values are written
# as the declared types read them (UtcDateTime: naive UTC "YYYY-MM-DD HH:MM:SS.ffffff"; JSON: JSON text),
# so every read through the table sees the same thing either way.
# Rows go a hundred to a statement (INSERT ... VALUES (...), (...), ...): measured 30 % faster than
# executemany, and the statement binds its parameters in one call instead of one per row.
_COLUMNS = [column.name for column in log_records.c]
_ROWS_PER_INSERT = 100  # x 14 parameters, well under SQLite's 32,766


@functools.cache
def _sqlite_insert(rows: int) -> str:
    single = str(log_records.insert().compile(dialect=sqlite.dialect()))
    head, _, values = single.partition(" VALUES ")
    return f"{head} VALUES {', '.join([values] * rows)}"


_ID_SLOT = _COLUMNS.index("id")
_RECEIVED_SLOT = _COLUMNS.index("received_at")


def _sqlite_time(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


# The parameter list below is written out column by column (a list display measured twice as fast as
# picking the values with itemgetter and inserting the id slots); this keeps it in step with the table.
_PARAMETER_ORDER = [
    "organization_id", "id", "received_at", "project_id", "kind", "level", "message", "timestamp",
    "attributes", "trace_id", "span_id", "name", "properties", "distinct_id",
]  # fmt: skip
if _COLUMNS != _PARAMETER_ORDER:  # pragma: no cover - a schema change must update _sqlite_parameters
    raise RuntimeError(f"log_records columns changed: {_COLUMNS}; update writer._sqlite_parameters")


def _sqlite_parameters(rows: list[Row]) -> list[list[Any]]:
    """Each row as the driver's parameter list; the id and ``received_at`` slots are filled at commit."""
    formatted: dict[datetime, str] = {}  # most records of a request share their time
    prepared = []
    for row in rows:
        moment = row["timestamp"]
        text = formatted.get(moment)
        if text is None:
            text = formatted[moment] = _sqlite_time(moment)
        attributes, properties = row["attributes"], row["properties"]
        prepared.append(
            [
                row["organization_id"],
                None,  # id
                None,  # received_at
                row["project_id"],
                row["kind"],
                row["level"],
                row["message"],
                text,
                # pydantic-core's encoder: several times faster than json.dumps; any JSON reads back the same.
                None if attributes is None else to_json(attributes).decode(),
                row["trace_id"],
                row["span_id"],
                row["name"],
                None if properties is None else to_json(properties).decode(),
                row["distinct_id"],
            ]
        )
    return prepared


def _record(row: Row, prepared: Any) -> dict[str, Any]:
    """A committed log record, with the fields of ``GET /logs`` a reader of it needs (the id is where
    ``append`` put it)."""
    committed_id = prepared[_ID_SLOT] if isinstance(prepared, list) else prepared["id"]
    return {
        "id": committed_id,
        "projectId": row["project_id"],
        "level": row["level"],
        "message": row["message"],
        "timestamp": isoformat(row["timestamp"]),
        "attributes": row["attributes"],
        "traceId": row["trace_id"],
        "spanId": row["span_id"],
    }


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a failure as seen even when its request has gone away (asyncio would log it as lost)."""
    if not future.cancelled():
        future.exception()


def _fail(group: Sequence[_Waiter], exc: BaseException) -> None:
    for waiter in group:
        if not waiter.future.done():
            waiter.future.set_exception(exc)
