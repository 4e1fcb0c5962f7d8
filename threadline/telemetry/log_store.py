"""SQLite's log appends, and the process of their own that runs them beside the server's.

Why a process: the server's interpreter has one lock (the GIL) for all its threads. On a writer thread
the appends' parameter binding and statements competed with the event loop for it: under load the two
added up to one core however many the machine had (measured with batches of 1,000: loop 5.3 ms, writer
6.3 ms per batch, 94 % of one core together). In a process of its own the append runs on another core;
the server's share is handing the rows over (``marshal``: ~0.1 ms per 1,000 rows) and waiting, without
the lock, for the answer.

The server stays the one that orders writes: a group is handed over only while the server holds its turn
to write (``Database.write_turn``, the queue every write transaction of the server waits in), so the store
never competes with the server's own writers for SQLite's write lock. It commits before it answers; an answer
never comes for what was not committed. The store exits when its input closes: at the server's
shutdown, after the last group, or when the server dies (what it was committing then was never
acknowledged).

The store is used when ``THREADLINE_LOG_STORE=process`` (the default; ``telemetry.append_sqlite``). This
module imports nothing heavy (the store starts in ~0.1 s): the server's side of the schema check is in
``telemetry.append_sqlite``.

    server (its event loop, in     ── frame: marshal([[14 values], ...]) ──▶  store: BEGIN IMMEDIATE,
    its turn to write)             ◀── frame: marshal(None | (error class, message)) ──  append, COMMIT
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import itertools
import marshal
import operator
import os
import signal
import sqlite3
import struct
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from threadline.kit import sqlite
from threadline.kit.hours import hour_of
from threadline.kit.ids import id_time_ms, ids_after

ID_PREFIX = "log"

# The columns of ``log_records`` in the order of a parameter list (``telemetry.writer`` checks them against
# the table at import): a list display of the values measured twice as fast as picking them by name.
COLUMNS = (
    "organization_id", "id", "received_at", "project_id", "kind", "level", "message", "timestamp",
    "attributes", "trace_id", "span_id", "name", "properties", "distinct_id",
)  # fmt: skip
ID_SLOT = COLUMNS.index("id")
RECEIVED_SLOT = COLUMNS.index("received_at")
TIMESTAMP_SLOT = COLUMNS.index("timestamp")
# The slots of what ``log_counts`` counts by (the hour is the group's, as its ids are).
COUNTED_SLOTS = tuple(COLUMNS.index(name) for name in ("organization_id", "project_id", "level", "kind"))
_counted = operator.itemgetter(*COUNTED_SLOTS)

# Rows go a hundred to a statement (INSERT ... VALUES (...), (...), ...): measured 30 % faster than
# executemany, and the statement binds its parameters in one call instead of one per row.
ROWS_PER_INSERT = 100  # x 14 parameters, well under SQLite's 32,766

_LAST_ID = "SELECT last_id FROM log_sequence WHERE id = 1"
_SET_LAST_ID = "UPDATE log_sequence SET last_id = ? WHERE id = 1"
# PostgreSQL's appender runs the same statement with its own placeholders (``append_postgres``).
ADD_COUNTS = (
    "INSERT INTO log_counts (organization_id, project_id, level, kind, hour, records) "
    "VALUES ({}, {}, {}, {}, {}, {}) ON CONFLICT (organization_id, hour, project_id, level, kind) "
    "DO UPDATE SET records = log_counts.records + excluded.records"
)
_ADD_COUNTS = ADD_COUNTS.format(*"??????")
_FRAME = struct.Struct("<I")
_STOP_SECONDS = 10.0
_PIPE_BYTES = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size
# The store runs this module from the same source tree as the server, however the server was started.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class AppendError(Exception):
    """An append that failed: ``error`` is the driver's exception, ``statement`` the statement it named."""

    def __init__(self, statement: str, error: sqlite3.Error) -> None:
        super().__init__(f"{statement}: {error}")
        self.statement = statement
        self.error = error


def sqlite_time(moment: datetime) -> str:
    """``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC, as ``UtcDateTime`` stores it on SQLite; a UTC moment is cut
    from its ISO form without converting it (half the cost: 2.2 instead of 4.2 us)."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat(" ", "microseconds")[:26]


@functools.cache
def insert_statement(rows: int) -> str:
    row = "(" + ", ".join("?" * len(COLUMNS)) + ")"
    return f"INSERT INTO log_records ({', '.join(COLUMNS)}) VALUES {', '.join([row] * rows)}"  # noqa: S608


def next_ids(last_id: str | None, count: int) -> tuple[list[str], datetime]:
    """``count`` ids after ``last_id``, and the moment they were made (every row's ``received_at``)."""
    ids = ids_after(ID_PREFIX, last_id, count)
    return ids, datetime.fromtimestamp(id_time_ms(ID_PREFIX, ids[0]) / 1000, UTC)


def tally(keys: Iterable[tuple[Any, ...]], moment: datetime) -> list[tuple[Any, ...]]:
    """A group's increments of ``log_counts``: one per (organization, project, level, kind) it holds, in
    the order of those keys (so two appenders lock the rows they share in one order), with the hour of
    ``moment``, as ``ADD_COUNTS``' parameters."""
    counted = Counter(keys)
    hour = hour_of(moment)
    return [(*key, hour, n) for key, n in sorted(counted.items())]


def append(cursor: sqlite3.Cursor, rows: Sequence[list[Any]]) -> None:
    """Give ``rows`` (parameter lists in ``COLUMNS`` order) ids after the last committed one and insert
    them, inside the caller's write transaction. The ids are written into the lists' id slots, and the
    moment they were received into their ``received_at`` slots and the ``timestamp`` slots left empty.
    The hour's counts (``log_counts``) go up by the group's records in the same transaction."""
    statement = _LAST_ID  # the one an error names
    try:
        found = cursor.execute(statement).fetchone()
        ids, moment = next_ids(found[0] if found else None, len(rows))
        received = sqlite_time(moment)
        for parameters, row_id in zip(rows, ids, strict=True):
            parameters[ID_SLOT] = row_id
            parameters[RECEIVED_SLOT] = received
            if parameters[TIMESTAMP_SLOT] is None:  # no time of its own: when it was received
                parameters[TIMESTAMP_SLOT] = received
        for start in range(0, len(rows), ROWS_PER_INSERT):
            chunk = rows[start : start + ROWS_PER_INSERT]
            statement = insert_statement(len(chunk))
            cursor.execute(statement, list(itertools.chain.from_iterable(chunk)))
        statement = _ADD_COUNTS
        cursor.executemany(statement, tally(map(_counted, rows), moment))
        statement = _SET_LAST_ID
        cursor.execute(statement, (ids[-1],))
    except sqlite3.Error as exc:
        raise AppendError(statement, exc) from exc


# --- the server's side -------------------------------------------------------------------------------


class StoreProcess:
    """The server's handle on its store process: started at the first append, started again after it
    ended, stopped by ``close``. Used from the event loop only, one ``commit`` at a time (the group
    commit's turn to write)."""

    def __init__(self, database: Path, failure: Callable[[AppendError], Exception] | None = None) -> None:
        """``failure``: what to raise for a refused append instead of the ``AppendError`` itself."""
        self._database = database
        self._failure = failure
        self._running: _Running | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The store's process id while it runs (for operators: its CPU is the intake's too)."""
        running = self._running
        return None if running is None or running.process.returncode is not None else running.process.pid

    async def commit(self, rows: list[list[Any]]) -> None:
        """Returns once the store has committed ``rows``. Raises ``AppendError`` (or what ``failure`` made
        of it) for what SQLite refused (the store rolled back), and ``OSError`` if the store is gone:
        whether it committed the rows first cannot be known then, so they were never acknowledged; the
        next call starts a new store."""
        if self._closed:
            raise OSError("the log store is closed")
        running = self._running
        if running is None or running.process.returncode is not None:
            running = self._running = await _Running.start(self._database)
        payload = marshal.dumps(rows)
        try:
            # No drain: the answer comes only once the store has read the whole frame.
            running.requests.write(_FRAME.pack(len(payload)) + payload)
            (size,) = _FRAME.unpack(await running.answers.readexactly(_FRAME.size))
            answer = await running.answers.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            await self._discard(running)
            raise OSError(f"the log store process ended (exit status {running.process.returncode})") from exc
        except BaseException:  # cancelled mid-frame: the next answer would be out of step
            await self._discard(running)
            raise
        failure = marshal.loads(answer)  # noqa: S302 - from our own child, over its private pipe
        if failure is not None:
            kind, statement, message = failure
            refused = AppendError(statement, getattr(sqlite3, kind, sqlite3.DatabaseError)(message))
            if self._failure is None:
                raise refused
            raise self._failure(refused) from refused

    async def close(self) -> None:
        """After the last commit: the store sees its input end, finishes and exits."""
        self._closed = True
        running, self._running = self._running, None
        if running is not None:
            await running.stop()

    async def _discard(self, running: _Running) -> None:
        if self._running is running:
            self._running = None
        await asyncio.shield(running.stop())


class _Running:
    """A started store: the process, the pipe its frames go down, the stream its answers come up."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        requests: asyncio.WriteTransport,
        answers: asyncio.StreamReader,
    ) -> None:
        self.process = process
        self.requests = requests
        self.answers = answers

    @classmethod
    async def start(cls, database: Path) -> _Running:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
        read_end, write_end = os.pipe()
        # A frame the pipe holds whole is written at once; with Linux's default 64 KiB a batch of 1,000
        # records (~95 KB) waited for the event loop to write its tail, and the store waited with it
        # (measured: the loop and the store then took turns, one core busy between them instead of two).
        with contextlib.suppress(OSError, AttributeError):  # Linux only; the limit may be lower
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                __name__,
                str(database),
                stdin=read_end,
                stdout=asyncio.subprocess.PIPE,
                env=env,
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        assert process.stdout is not None
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(write_end, "wb", buffering=0)
        requests, _ = await loop.connect_write_pipe(asyncio.Protocol, pipe)
        return cls(process, requests, process.stdout)

    async def stop(self) -> None:
        self.requests.close()
        try:
            await asyncio.wait_for(self.process.wait(), _STOP_SECONDS)
        except TimeoutError:  # pragma: no cover - a store stuck in a commit for 10 s
            self.process.kill()
            await self.process.wait()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame, or None if the stream ended (at a frame's boundary or inside one)."""
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


# --- the store process ---------------------------------------------------------------------------------


def serve(database: str, requests: IO[bytes], answers: IO[bytes]) -> None:
    """Commit each group of rows read from ``requests`` and answer it, until ``requests`` ends."""
    sqlite.bind_none_fast()
    connection = sqlite3.connect(database, isolation_level=None, timeout=10)
    try:
        sqlite.configure(connection)
        cursor = connection.cursor()
        while (frame := _read_frame(requests)) is not None:
            rows = marshal.loads(frame)  # noqa: S302 - from the server that started us, over a private pipe
            answer = _commit(connection, cursor, rows)
            payload = marshal.dumps(answer)
            answers.write(_FRAME.pack(len(payload)) + payload)
            answers.flush()
    finally:
        connection.close()


def _commit(
    connection: sqlite3.Connection, cursor: sqlite3.Cursor, rows: list[list[Any]]
) -> tuple[str, str, str] | None:
    try:
        cursor.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        return (type(exc).__name__, "BEGIN IMMEDIATE", str(exc))
    try:
        append(cursor, rows)
        cursor.execute("COMMIT")
    except (AppendError, sqlite3.Error) as exc:
        if connection.in_transaction:
            connection.rollback()
        if isinstance(exc, AppendError):
            return (type(exc.error).__name__, exc.statement, str(exc.error))
        return (type(exc).__name__, "COMMIT", str(exc))
    return None


def main() -> None:
    # Signals meant for the server (a terminal's Ctrl-C reaches the whole process group; a service
    # manager's SIGTERM may too) must not stop the store: the server drains through it, then closes its
    # input. A server that dies closes it as well.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print must not corrupt the answers
    # A server that died mid-commit: what was committed then was never acknowledged; nothing to report.
    with contextlib.suppress(BrokenPipeError):
        serve(sys.argv[1], sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
