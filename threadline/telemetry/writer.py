"""The intake's writes: many requests, one transaction (``kit.db.GroupCommit``).

A request hands its decoded rows to the writer and waits; 202 is sent only after the commit of the group
its rows went into, so an answered request is on disk, whatever happens to the process next. Groups hold
up to ``_MAX_GROUP_ROWS`` records (a request's records are never split); one that fails because of its
data (a foreign key: a project deleted a moment ago; a value the database refuses) is retried request by
request. What is the intake's own: the records' ids come from ``log_sequence`` inside the transaction (so
they follow commit order across processes), every commit announces the organizations it wrote for, which
wakes the live tails (``telemetry.tail``), and the records a ``RecordWatch`` picked out (log-triggered
automations) are persisted with them and handed back to it with their ids.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.engine.interfaces import DBAPICursor

from threadline.kit.clock import isoformat
from threadline.kit.db import Database, GroupCommit
from threadline.kit.ids import id_time_ms, ids_after
from threadline.kit.signals import SignalBus
from threadline.telemetry.decoding import Row
from threadline.telemetry.tables import log_records, log_sequence

log = logging.getLogger(__name__)

LOGS_APPENDED = "logs.appended"
ID_PREFIX = "log"
_MAX_GROUP_ROWS = 20_000


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
class _Batch:
    """One request's records, already in the form the insert takes (see ``append``)."""

    rows: list[Any]
    organizations: frozenset[str]
    # What the watch picked: (tag, the row as decoded, the same row as prepared for the insert).
    watched: list[tuple[Any, Row, Any]]


_Hits = list[tuple[Any, dict[str, Any]]]


class LogWriter:
    def __init__(self, db: Database, signals: SignalBus, watch: RecordWatch | None = None) -> None:
        self._signals = signals
        self._watch = watch
        self._announcing: set[asyncio.Task[None]] = set()
        self._sqlite = db.dialect_name == "sqlite"
        self._commits: GroupCommit[_Batch, _Hits] = GroupCommit(
            db,
            self._write,
            name="logs",
            committed=self._committed,
            weigh=lambda batch: len(batch.rows),
            max_weight=_MAX_GROUP_ROWS,
        )

    async def write(self, rows: list[Row]) -> None:
        """Returns once ``rows`` are committed (they get their ids and ``received_at`` then)."""
        if not rows:
            return
        organizations = frozenset(row["organization_id"] for row in rows)
        # Prepared here, outside the write lock: only ids, the insert and the commit are serialized.
        prepared: list[Any] = _sqlite_parameters(rows) if self._sqlite else rows
        watched = []
        if self._watch is not None:
            watched = [(tag, rows[index], prepared[index]) for tag, index in self._watch.match(rows)]
        await self._commits.submit(_Batch(prepared, organizations, watched))

    def _write(self, connection: Connection, group: Sequence[_Batch]) -> _Hits:
        append(connection, [row for batch in group for row in batch.rows])
        hits = [(tag, _record(row, prepared)) for batch in group for tag, row, prepared in batch.watched]
        if hits and self._watch is not None:
            self._watch.persist(connection, hits)
        return hits

    def _committed(self, group: Sequence[_Batch], hits: _Hits) -> None:
        if hits and self._watch is not None:
            try:
                self._watch.committed(hits)
            except Exception:  # the records are committed either way
                log.exception("a record watch failed")
        announce = asyncio.create_task(self._announce(frozenset().union(*(b.organizations for b in group))))
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
        await self._commits.aclose()


def append(connection: Connection, rows: list[Any]) -> None:
    """Give ``rows`` ids after the last committed one (locking the sequence row) and insert them. Runs
    inside the caller's write transaction (``Database.write_session``). ``rows``: on SQLite, parameter lists
    from ``_sqlite_parameters``; on PostgreSQL, row dicts."""
    if connection.dialect.name == "sqlite":
        _sqlite_append(connection.connection.cursor(), rows)  # the driver's own cursor
        return
    query = sa.select(log_sequence.c.last_id).where(log_sequence.c.id == 1).with_for_update()
    ids, received_at = _next_ids(connection.execute(query).scalar_one_or_none(), len(rows))
    for row, row_id in zip(rows, ids, strict=True):
        row["id"] = row_id
        row["received_at"] = received_at
    connection.execute(log_records.insert(), rows)
    connection.execute(log_sequence.update().where(log_sequence.c.id == 1).values(last_id=ids[-1]))


def _next_ids(last_id: str | None, count: int) -> tuple[list[str], datetime]:
    """``count`` ids after ``last_id``, and the moment they were made (every row's ``received_at``)."""
    ids = ids_after(ID_PREFIX, last_id, count)
    return ids, datetime.fromtimestamp(id_time_ms(ID_PREFIX, ids[0]) / 1000, UTC)


# On SQLite the sequence is read and written through the driver too, with no FOR UPDATE (the transaction's
# write lock is held already): through SQLAlchemy Core each of these one-row statements measured ~0.2 ms
# of CPU alone and 0.5-0.8 ms in the server (a group of ~60 single-record requests spent 1.4 of its 2.4 ms
# in the writer on them), against ~20 us through the driver.
_SQLITE_LAST_ID = "SELECT last_id FROM log_sequence WHERE id = 1"
_SQLITE_SET_LAST_ID = "UPDATE log_sequence SET last_id = ? WHERE id = 1"


def _sqlite_append(cursor: DBAPICursor, rows: list[list[Any]]) -> None:
    statement = _SQLITE_LAST_ID  # the one an error names
    try:
        found = cursor.execute(statement).fetchone()
        ids, received_at = _next_ids(found[0] if found else None, len(rows))
        received_text = _sqlite_time(received_at)
        for parameters, row_id in zip(rows, ids, strict=True):
            parameters[_ID_SLOT] = row_id
            parameters[_RECEIVED_SLOT] = received_text
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start : start + _ROWS_PER_INSERT]
            statement = _sqlite_insert(len(chunk))
            cursor.execute(statement, list(itertools.chain.from_iterable(chunk)))
        statement = _SQLITE_SET_LAST_ID
        cursor.execute(statement, (ids[-1],))
    except sqlite3.Error as exc:  # as SQLAlchemy would have raised it (IntegrityError, ...)
        raise sa.exc.DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc
    finally:
        cursor.close()


# SQLite's bulk path hands parameter lists to the driver: SQLAlchemy's per-row parameter processing (type
# decorators, JSON) measured 15 us a row, twice the cost of the insert itself. The values are written
# as the declared types read them (UtcDateTime: naive UTC "YYYY-MM-DD HH:MM:SS.ffffff"; JSON: JSON text),
# so every read through the table sees the same thing either way.
# Rows go a hundred to a statement (INSERT ... VALUES (...), (...), ...): measured 30 % faster than
# executemany, and the statement binds its parameters in one call instead of one per row. A thousand
# per statement costs less CPU alone (7.5-8.3 against 10.5-11.9 ms per 1,000 rows) but did not do better
# in the server (bench/intake.py batches: 48,800 and 48,100 records/s against 53,900 with a hundred): the
# GIL is held for the whole bind of 14,000 parameters, and the loop's decoding waits meanwhile.
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
    """``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC; a UTC moment is cut from its ISO form without converting
    it (half the cost: 2.2 instead of 4.2 us, paid per request for single records)."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat(" ", "microseconds")[:26]


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
