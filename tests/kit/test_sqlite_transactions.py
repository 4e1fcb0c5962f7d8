"""SQLite write transactions in ``kit.db``: the write lock taken up front on the event loop when it is free,
waited for off the loop when another process holds it, and the busy timeout left as it was set; every
write committed and durable whichever way its commit went (on the loop when it changed no row)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from threadline.kit.db import Database
from threadline.kit.sqlite import BUSY_TIMEOUT_MS

notes = sa.table("notes", sa.column("id", sa.Integer), sa.column("body", sa.Text))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'kit.db'}")
    create = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"
    await database.run_sync(lambda connection: connection.exec_driver_sql(create))
    yield database
    await database.dispose()


def other_process(db: Database) -> sqlite3.Connection:
    """A connection of its own on the same file, as another process (the CLI, a log store) has."""
    assert db.sqlite_path is not None
    return sqlite3.connect(db.sqlite_path, isolation_level=None, check_same_thread=False, timeout=0)


def bodies(db: Database) -> list[str]:
    with other_process(db) as reader:
        return [row[0] for row in reader.execute("SELECT body FROM notes ORDER BY id")]


async def test_a_write_transaction_holds_the_write_lock_from_its_start(db: Database) -> None:
    other = other_process(db)
    async with db.transaction() as conn:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        timeout = (await conn.execute(sa.text("PRAGMA busy_timeout"))).scalar_one()
        assert timeout == BUSY_TIMEOUT_MS  # set back after the lock was tried without waiting
    other.execute("BEGIN IMMEDIATE")  # released at the end
    other.execute("ROLLBACK")
    other.close()


async def test_a_writer_waits_off_the_loop_for_another_processs_lock_then_commits(db: Database) -> None:
    other = other_process(db)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO notes (body) VALUES ('theirs')")
    ticks = 0
    released = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not released.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    async def release() -> None:
        await asyncio.sleep(0.05)
        seen_while_waiting = ticks
        other.execute("COMMIT")
        released.set()
        assert seen_while_waiting > 1, "the event loop stood still while the writer waited for the lock"

    async def write() -> None:
        async with db.transaction() as conn:
            await conn.execute(notes.insert().values(body="ours"))

    await asyncio.gather(tick(), release(), write())
    other.close()
    assert bodies(db) == ["theirs", "ours"]


async def test_writes_are_committed_and_one_that_changed_nothing_releases_the_lock(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(notes.insert().values(body="first"))
    async with db.transaction() as conn:  # changes no row: commits on the loop
        await conn.execute(notes.update().where(notes.c.id == -1).values(body="none"))
        await conn.execute(sa.select(notes.c.id))
    async with db.transaction() as conn:
        await conn.execute(notes.update().where(notes.c.body == "first").values(body="second"))
    assert bodies(db) == ["second"]
    other = other_process(db)
    other.execute("BEGIN IMMEDIATE")  # nothing of ours still holds the lock
    other.execute("ROLLBACK")
    other.close()


async def failing_write(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(notes.insert().values(body="lost"))
        raise RuntimeError("the handler failed")


async def test_a_failed_write_rolls_back_and_releases_the_lock(db: Database) -> None:
    with pytest.raises(RuntimeError):
        await failing_write(db)
    assert bodies(db) == []
    async with db.transaction() as conn:
        await conn.execute(notes.insert().values(body="next"))
    assert bodies(db) == ["next"]
