"""The intake's writes: many requests, one transaction (``kit.group_commit.GroupCommit``).

A request hands its decoded rows to the writer and waits; 202 is sent only after the commit of the group
its rows went into, so an answered request is on disk, whatever happens to the process next. Groups hold
up to ``_MAX_GROUP_ROWS`` records (a request's records are never split); one that fails because of its
data (a foreign key: a project deleted a moment ago; a value the database refuses) is retried request by
request. What is the intake's own: the records' ids come from ``log_sequence`` inside the transaction (so
they follow commit order across processes), every commit announces the organizations it wrote for, which
wakes the live tails (``telemetry.tail``), and the records a ``RecordWatch`` picked out (log-triggered
automations) are persisted with them and handed back to it with their ids.

How the records are appended is the backend's (a ``LogAppender``, chosen by the composition root):
PostgreSQL's in the server (``append_postgres``); SQLite's in the server or, by default, by a process of
its own on another core than the server's event loop (``append_sqlite``, ``telemetry.log_store``). Groups
with records a watch picked out are always appended in the server, in the same transaction as what the
watch persists. Either way it happens in the server's turn to write.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.engine import Connection

from threadline.kit.db import Database
from threadline.kit.group_commit import GroupCommit
from threadline.kit.signals import SignalBus
from threadline.telemetry.records import Row

log = logging.getLogger(__name__)

# Payload: "<organization id> <mark>", the mark unique to the commit: the publishing process hears its own
# signal twice on Redis (at once, then from the channel), and a live tail reads once per mark.
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


class LogStore(Protocol):
    """Something that commits groups apart from the server (SQLite's store process), raising what it
    refuses as SQLAlchemy would."""

    async def commit(self, rows: list[Any]) -> None: ...

    async def close(self) -> None: ...


class LogAppender(Protocol):
    """One backend's way of appending records: prepared per request outside the write lock, appended per
    group in the server's write transaction, or by ``store`` (if any) for groups no watch picked from."""

    @property
    def store(self) -> LogStore | None: ...

    def prepare(self, rows: list[Row]) -> list[Any]:
        """One request's rows in the form ``append`` takes."""
        ...

    def append(self, connection: Connection, rows: list[Any]) -> None:
        """Give ``rows`` ids after the last committed one (locking the sequence row), then
        ``received_at`` and, to a record sent without a time, its ``timestamp``; insert them. Inside the
        caller's write transaction."""
        ...

    def committed(self, row: Row, prepared: Any) -> dict[str, Any]:
        """The record ``row`` as committed (``prepared``: the same row after ``append``), for a watch."""
        ...


@dataclass(slots=True)
class _Batch:
    """One request's records, already in the form the insert takes (``LogAppender.prepare``)."""

    rows: list[Any]
    organization_id: str
    # What the watch picked: (tag, the row as decoded, the same row as prepared for the insert).
    watched: list[tuple[Any, Row, Any]]


_Hits = list[tuple[Any, dict[str, Any]]]


class LogWriter:
    def __init__(
        self, db: Database, signals: SignalBus, appender: LogAppender, watch: RecordWatch | None = None
    ) -> None:
        self._signals = signals
        self._marks = (f"{secrets.token_hex(4)}.{n}" for n in itertools.count())
        self._watch = watch
        self._announcing: set[asyncio.Task[None]] = set()
        self._prepare = appender.prepare
        self._append = appender.append
        self._committed_record = appender.committed
        group: dict[str, Any] = {
            "committed": self._committed,
            "weigh": lambda batch: len(batch.rows),
            "max_weight": _MAX_GROUP_ROWS,
        }
        # Appended in this process, in the group's transaction: every group without a store, and with one
        # the requests with records a watch picked out (persisted in the same transaction as the records).
        self._commits: GroupCommit[_Batch, _Hits] = GroupCommit(db, self._write, name="logs", **group)
        # Every other request, where there is a store: appended by it.
        self._store = appender.store
        self._handed_off: GroupCommit[_Batch, _Hits] | None = None
        if self._store is not None:
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
        prepared = self._prepare(rows)
        watched = []
        if self._watch is not None:
            watched = [(tag, rows[index], prepared[index]) for tag, index in self._watch.match(rows)]
        committer = self._commits if watched or self._handed_off is None else self._handed_off
        return committer.enqueue(_Batch(prepared, organization_id, watched))

    def _write(self, connection: Connection, group: Sequence[_Batch]) -> _Hits:
        self._append(connection, [row for batch in group for row in batch.rows])
        hits = [
            (tag, self._committed_record(row, prepared))
            for batch in group
            for tag, row, prepared in batch.watched
        ]
        if hits and self._watch is not None:
            self._watch.persist(connection, hits)
        return hits

    async def _hand_off(self, group: Sequence[_Batch]) -> _Hits:
        assert self._store is not None
        await self._store.commit([row for batch in group for row in batch.rows])
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
                await self._signals.publish(LOGS_APPENDED, f"{organization_id} {next(self._marks)}")
            except Exception:  # a tail falls back to polling; the rows are committed either way
                log.warning("could not announce new log records", exc_info=True)

    async def aclose(self) -> None:
        """Finish what was accepted: every waiting request gets its answer before the process ends."""
        await self._commits.aclose()
        if self._handed_off is not None and self._store is not None:
            await self._handed_off.aclose()
            await self._store.close()


def committed_record(row: Row, committed_id: str, timestamp: str) -> dict[str, Any]:
    """A committed log record, with the fields of ``GET /logs`` a reader of it needs (``committed_id``,
    and ``timestamp`` for a record sent without one, as the append gave them)."""
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
