"""The intake's writes: many requests, one transaction (``kit.db.GroupCommit``).

A request hands its decoded rows to the writer and waits; 202 is sent only after the commit of the group
its rows went into, so an answered request is on disk, whatever happens to the process next. Groups hold
up to ``_MAX_GROUP_ROWS`` records (a request's records are never split); one that fails because of its
data (a foreign key: a project deleted a moment ago; a value the database refuses) is retried request by
request. What is the intake's own: the records' ids come from ``log_sequence`` inside the transaction (so
they follow commit order across processes), every commit announces the organizations it wrote for, which
wakes the live tails (``telemetry.tail``), and the records a ``RecordWatch`` picked out (log-triggered
automations) are persisted with them and handed back to it with their ids.

On SQLite a group is appended by a process of its own (``telemetry.log_store``), on another core than the
server's event loop; a group with records a watch picked out is appended here instead, in the same
transaction as what the watch persists. Either way it happens in the server's turn to write.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.engine import Connection

from threadline.kit.clock import isoformat
from threadline.kit.db import Database, GroupCommit, stored_isoformat
from threadline.kit.signals import SignalBus
from threadline.telemetry import log_store
from threadline.telemetry.decoding import Row
from threadline.telemetry.log_store import ID_SLOT, TIMESTAMP_SLOT, AppendError, StoreProcess, sqlite_time
from threadline.telemetry.tables import log_records, log_sequence

log = logging.getLogger(__name__)

LOGS_APPENDED = "logs.appended"
_MAX_GROUP_ROWS = 20_000
# Smaller groups for the store process, so the loop decodes the next group while the store appends this
# one: with 20,000 every request in flight went into one group and the two took turns (16 connections of
# batches of 1,000: groups of 15,000-16,000 rows, the store waiting 100-150 ms between them); in three
# alternating runs 2,000 / 4,000 / 20,000 rows did 80 / 97 / 74 batches a second.
_MAX_STORE_GROUP_ROWS = 4_000


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
    organization_id: str
    # What the watch picked: (tag, the row as decoded, the same row as prepared for the insert).
    watched: list[tuple[Any, Row, Any]]


_Hits = list[tuple[Any, dict[str, Any]]]


class LogWriter:
    def __init__(self, db: Database, signals: SignalBus, watch: RecordWatch | None = None) -> None:
        self._signals = signals
        self._watch = watch
        self._announcing: set[asyncio.Task[None]] = set()
        self._sqlite = db.dialect_name == "sqlite"
        group: dict[str, Any] = {
            "committed": self._committed,
            "weigh": lambda batch: len(batch.rows),
            "max_weight": _MAX_GROUP_ROWS,
        }
        # Appended in this process, in the group's transaction: PostgreSQL's groups, and on SQLite the
        # requests with records a watch picked out (persisted in the same transaction as the records).
        self._commits: GroupCommit[_Batch, _Hits] = GroupCommit(db, self._write, name="logs", **group)
        # Every other SQLite request: appended by the store process.
        path = db.sqlite_path
        self._store: StoreProcess | None = None
        self._handed_off: GroupCommit[_Batch, _Hits] | None = None
        if path is not None and path.name not in ("", ":memory:"):
            self._store = StoreProcess(path)
            group["max_weight"] = _MAX_STORE_GROUP_ROWS
            self._handed_off = GroupCommit(db, write_async=self._hand_off, name="logs-store", **group)

    def submit(self, organization_id: str, rows: list[Row]) -> asyncio.Future[None]:
        """A future done once ``rows`` (one request's, all of ``organization_id``) are committed, when
        they get their ids and ``received_at``; awaited by the caller at once (``GroupCommit.enqueue``)."""
        if not rows:
            nothing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            nothing.set_result(None)
            return nothing
        # Prepared here, outside the write lock: only ids, the insert and the commit are serialized.
        prepared: list[Any] = _sqlite_parameters(rows) if self._sqlite else rows
        watched = []
        if self._watch is not None:
            watched = [(tag, rows[index], prepared[index]) for tag, index in self._watch.match(rows)]
        committer = self._commits if watched or self._handed_off is None else self._handed_off
        return committer.enqueue(_Batch(prepared, organization_id, watched))

    def _write(self, connection: Connection, group: Sequence[_Batch]) -> _Hits:
        append(connection, [row for batch in group for row in batch.rows])
        hits = [(tag, _record(row, prepared)) for batch in group for tag, row, prepared in batch.watched]
        if hits and self._watch is not None:
            self._watch.persist(connection, hits)
        return hits

    async def _hand_off(self, group: Sequence[_Batch]) -> _Hits:
        assert self._store is not None
        try:
            await self._store.commit([row for batch in group for row in batch.rows])
        except AppendError as exc:
            raise _as_sqlalchemy(exc) from exc
        return []

    def _committed(self, group: Sequence[_Batch], hits: _Hits) -> None:
        if hits and self._watch is not None:
            try:
                self._watch.committed(hits)
            except Exception:  # the records are committed either way
                log.exception("a record watch failed")
        announce = asyncio.create_task(self._announce({batch.organization_id for batch in group}))
        self._announcing.add(announce)
        announce.add_done_callback(self._announcing.discard)

    async def _announce(self, organizations: set[str]) -> None:
        for organization_id in organizations:
            try:
                await self._signals.publish(LOGS_APPENDED, organization_id)
            except Exception:  # a tail falls back to polling; the rows are committed either way
                log.warning("could not announce new log records", exc_info=True)

    async def aclose(self) -> None:
        """Finish what was accepted: every waiting request gets its answer before the process ends."""
        await self._commits.aclose()
        if self._handed_off is not None and self._store is not None:
            await self._handed_off.aclose()
            await self._store.close()


def append(connection: Connection, rows: list[Any]) -> None:
    """Give ``rows`` ids after the last committed one (locking the sequence row) and insert them. Runs
    inside the caller's write transaction (``Database.write_session``). ``rows``: on SQLite, parameter lists
    from ``_sqlite_parameters``; on PostgreSQL, row dicts."""
    if connection.dialect.name == "sqlite":
        cursor = connection.connection.cursor()  # the driver's own cursor
        try:
            log_store.append(cursor, rows)  # type: ignore[arg-type]
        except AppendError as exc:
            raise _as_sqlalchemy(exc) from exc
        finally:
            cursor.close()
        return
    query = sa.select(log_sequence.c.last_id).where(log_sequence.c.id == 1).with_for_update()
    ids, received_at = log_store.next_ids(connection.execute(query).scalar_one_or_none(), len(rows))
    for row, row_id in zip(rows, ids, strict=True):
        row["id"] = row_id
        row["received_at"] = received_at
        if row["timestamp"] is None:  # no time of its own: when it was received
            row["timestamp"] = received_at
    connection.execute(log_records.insert(), rows)
    connection.execute(log_sequence.update().where(log_sequence.c.id == 1).values(last_id=ids[-1]))


def _as_sqlalchemy(exc: AppendError) -> sa.exc.StatementError:
    """As SQLAlchemy raises a driver's error (IntegrityError, DataError, OperationalError, ...), so the
    group commit and the intake treat a failed append the same whichever process ran it."""
    return sa.exc.DBAPIError.instance(exc.statement, None, exc.error, sqlite3.Error)


# The parameter lists are written out column by column in ``_sqlite_parameters`` and inserted by a
# statement of ``log_store``'s (which imports no SQLAlchemy); this keeps both in step with the table.
_COLUMNS = tuple(column.name for column in log_records.c)
if _COLUMNS != log_store.COLUMNS:  # pragma: no cover - a schema change must update both
    raise RuntimeError(f"log_records columns changed: {_COLUMNS}; update log_store.COLUMNS")


def _sqlite_parameters(rows: list[Row]) -> list[list[Any]]:
    """Each row as the driver's parameter list; the id and ``received_at`` slots are filled at commit, and
    the ``timestamp`` slot of a record sent without a time (``append`` gives it its ``received_at``)."""
    formatted: dict[datetime, str] = {}  # records sent with a time often share it
    prepared = []
    for row in rows:
        moment = row["timestamp"]
        text = None
        if moment is not None:
            text = formatted.get(moment)
            if text is None:
                text = formatted[moment] = sqlite_time(moment)
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
    """A committed log record, with the fields of ``GET /logs`` a reader of it needs (the id, and the
    timestamp of a record sent without one, are where ``append`` put them)."""
    if isinstance(prepared, list):  # SQLite's parameters
        committed_id, timestamp = prepared[ID_SLOT], stored_isoformat(prepared[TIMESTAMP_SLOT])
    else:
        committed_id, timestamp = prepared["id"], isoformat(prepared["timestamp"])
    return {
        "id": committed_id,
        "projectId": row["project_id"],
        "level": row["level"],
        "message": row["message"],
        "timestamp": timestamp,
        "attributes": row["attributes"],
        "traceId": row["trace_id"],
        "spanId": row["span_id"],
    }
