"""Group commit: many intake requests, one transaction.

A request hands its decoded rows to the writer and waits; the writer commits everything that arrived while
the previous commit was running, in one transaction, then answers every waiter at once. The first request
on an idle writer is committed at once (no timer), and under load each commit carries more rows, so the
cost of making data durable (one fsync on SQLite) is shared instead of paid per request. 202 is sent only
after the commit, so an answered request is on disk, whatever happens to the process next.

A group that fails on a constraint (a project deleted a moment ago) is retried request by request, so one
request's problem never fails the others. Every commit announces the organizations it wrote for, which
wakes the live tails (``telemetry.tail``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from threadline.kit.db import Database
from threadline.kit.ids import id_time_ms, ids_after
from threadline.kit.signals import SignalBus
from threadline.telemetry.decoding import Row
from threadline.telemetry.tables import log_records, log_sequence

log = logging.getLogger(__name__)

LOGS_APPENDED = "logs.appended"
ID_PREFIX = "log"
_MAX_GROUP_ROWS = 20_000

_Waiter = tuple[list[Row], "asyncio.Future[None]"]


class LogWriter:
    def __init__(self, db: Database, signals: SignalBus) -> None:
        self._db = db
        self._signals = signals
        self._pending: list[_Waiter] = []
        self._flusher: asyncio.Task[None] | None = None

    async def write(self, rows: list[Row]) -> None:
        """Returns once ``rows`` are committed (they get their ids and ``received_at`` then)."""
        if not rows:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        self._pending.append((rows, future))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush(), name="threadline-log-writer")
        # Shielded: a request that goes away must not cancel the commit its rows are part of.
        await asyncio.shield(future)

    async def _flush(self) -> None:
        try:
            while self._pending:
                group = self._take_group()
                try:
                    await self._commit(group)
                except Exception as exc:
                    if len(group) > 1 and isinstance(exc, sa.exc.IntegrityError):
                        for waiter in group:
                            await self._commit_alone(waiter)
                    else:
                        _fail(group, exc)
        finally:
            self._flusher = None

    def _take_group(self) -> list[_Waiter]:
        group: list[_Waiter] = []
        size = 0
        while self._pending and (not group or size + len(self._pending[0][0]) <= _MAX_GROUP_ROWS):
            waiter = self._pending.pop(0)
            group.append(waiter)
            size += len(waiter[0])
        return group

    async def _commit_alone(self, waiter: _Waiter) -> None:
        try:
            await self._commit([waiter])
        except Exception as exc:
            _fail([waiter], exc)

    async def _commit(self, group: Sequence[_Waiter]) -> None:
        rows = [row for batch, _ in group for row in batch]
        await self._db.write_sync(lambda connection: append(connection, rows))
        for _, future in group:
            if not future.done():
                future.set_result(None)
        for organization_id in {row["organization_id"] for row in rows}:
            try:
                await self._signals.publish(LOGS_APPENDED, organization_id)
            except Exception:  # a tail falls back to polling; the rows are committed either way
                log.warning("could not announce new log records", exc_info=True)

    async def aclose(self) -> None:
        """Finish what was accepted: every waiting request gets its answer before the process ends."""
        while self._flusher is not None:
            await asyncio.shield(self._flusher)


def append(connection: Connection, rows: list[Row]) -> None:
    """Give ``rows`` ids after the last committed one (locking the sequence row) and insert them. Runs
    inside the caller's write transaction (``Database.write_sync``)."""
    # FOR UPDATE on PostgreSQL; SQLite renders nothing for it (its write lock is held already).
    query = sa.select(log_sequence.c.last_id).where(log_sequence.c.id == 1).with_for_update()
    last_id = connection.execute(query).scalar_one_or_none()
    ids = ids_after(ID_PREFIX, last_id, len(rows))
    received_at = datetime.fromtimestamp(id_time_ms(ID_PREFIX, ids[0]) / 1000, UTC)
    for row, row_id in zip(rows, ids, strict=True):
        row["id"] = row_id
        row["received_at"] = received_at
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql(_SQLITE_INSERT, _sqlite_parameters(rows))
    else:
        connection.execute(log_records.insert(), rows)
    connection.execute(log_sequence.update().where(log_sequence.c.id == 1).values(last_id=ids[-1]))


# SQLite's bulk path hands tuples to the driver: SQLAlchemy's per-row parameter processing (type
# decorators, JSON) measured 15 us a row, twice the cost of the insert itself. The values are written
# exactly as the declared types write them (UtcDateTime: naive UTC "YYYY-MM-DD HH:MM:SS.ffffff"; JSON:
# json.dumps), so every read through the table sees the same thing either way.
_COLUMNS = [column.name for column in log_records.c]
_SQLITE_INSERT = str(log_records.insert().compile(dialect=sqlite.dialect()))
_JSON_COLUMNS = frozenset({"attributes", "properties"})
_TIME_COLUMNS = frozenset({"received_at", "timestamp"})


def _sqlite_parameters(rows: list[Row]) -> list[tuple[Any, ...]]:
    formatted: dict[datetime, str] = {}  # most records of a request share their time of receipt

    def sqlite_time(moment: datetime) -> str:
        text = formatted.get(moment)
        if text is None:
            text = formatted[moment] = (
                moment.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")
            )
        return text

    converters = [
        sqlite_time if name in _TIME_COLUMNS else _json_or_null if name in _JSON_COLUMNS else None
        for name in _COLUMNS
    ]
    return [
        tuple(
            row[name] if convert is None else convert(row[name])
            for name, convert in zip(_COLUMNS, converters, strict=True)
        )
        for row in rows
    ]


def _json_or_null(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a failure as seen even when its request has gone away (asyncio would log it as lost)."""
    if not future.cancelled():
        future.exception()


def _fail(group: Sequence[_Waiter], exc: BaseException) -> None:
    for _, future in group:
        if not future.done():
            future.set_exception(exc)
