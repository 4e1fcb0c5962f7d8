"""A small asyncio driver for SQLite, shaped like aiosqlite for SQLAlchemy's aiosqlite dialect.

aiosqlite moves every DBAPI call to its thread: creating a cursor, executing, fetching and closing it are
four round trips through the event loop for one statement, and those round trips, not SQLite, were most
of a request's time (measured: ~1.2 ms for a one-row read under load). Here:

* statements run on the event loop itself: an indexed read or a one-row write takes SQLite tens of
  microseconds, less than a single thread round trip;
* what can wait runs on a worker thread, one round trip each: ``BEGIN IMMEDIATE`` (it may wait for another
  process's write lock), the ``COMMIT`` of a write (it waits for the disk), and every statement of a
  connection marked ``inline = False`` (long queries such as full-text search; SQLite releases the GIL
  while it works, so they run beside the loop instead of stalling it).

Connections are used by one task at a time (SQLAlchemy's pool guarantees it), so the sqlite3 connection is
safely shared with whichever thread runs the call.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")
_Description = tuple[tuple[Any, ...], ...] | None


class Connection:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._conn = connection
        # SQLAlchemy's adapter reads aiosqlite's ``_connection`` to know whether the connection is open.
        self._connection: sqlite3.Connection | None = connection
        self.inline = True
        self._writing = False

    async def _run(self, function: Callable[..., T], *args: Any, wait: bool = False) -> T:
        if self.inline and not wait:
            return function(*args)
        return await asyncio.get_running_loop().run_in_executor(None, partial(function, *args))

    def cursor(self) -> Cursor:
        return Cursor(self)

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    async def commit(self) -> None:
        writing, self._writing = self._writing, False
        await self._run(self._conn.commit, wait=writing)

    async def rollback(self) -> None:
        self._writing = False
        await self._run(self._conn.rollback)

    async def close(self) -> None:
        self._connection = None
        await self._run(self._conn.close)

    def stop(self) -> None:
        """Forced close (SQLAlchemy's terminate), without waiting."""
        self._connection = None
        self._conn.close()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    def execute_and_fetch(
        self, sql: str, parameters: Sequence[Any] | dict[str, Any]
    ) -> tuple[_Description, int, int | None, list[Any]]:
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql, parameters)
            rows = cursor.fetchall() if cursor.description else []
            return cursor.description, cursor.rowcount, cursor.lastrowid, rows
        finally:
            cursor.close()

    def execute_many(self, sql: str, parameters: Sequence[Any]) -> tuple[int, int | None]:
        cursor = self._conn.cursor()
        try:
            cursor.executemany(sql, parameters)
            return cursor.rowcount, cursor.lastrowid
        finally:
            cursor.close()


class Cursor:
    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.description: _Description = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self._rows: list[Any] = []

    async def __aenter__(self) -> Cursor:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> Cursor:
        takes_lock = sql.startswith("BEGIN IMMEDIATE")
        if takes_lock:
            self._connection._writing = True
        result = await self._connection._run(
            self._connection.execute_and_fetch, sql, parameters, wait=takes_lock
        )
        self.description, self.rowcount, self.lastrowid, self._rows = result
        return self

    async def executemany(self, sql: str, parameters: Sequence[Any]) -> Cursor:
        self.rowcount, self.lastrowid = await self._connection._run(
            self._connection.execute_many, sql, parameters
        )
        self.description, self._rows = None, []
        return self

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        size = size or self.arraysize
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    async def close(self) -> None:
        self._rows = []


def creator(path: str) -> Callable[[], Any]:
    """``create_async_engine(..., async_creator=creator(path))``: autocommit at the driver level, so the
    engine's ``begin`` hook (kit/db.py) opens every transaction itself, with the right mode."""

    async def connect() -> Connection:
        def open_connection() -> sqlite3.Connection:
            return sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)

        return Connection(await asyncio.get_running_loop().run_in_executor(None, open_connection))

    return connect
