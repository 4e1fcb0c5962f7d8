"""Backing up and restoring the embedded shape's SQLite file (``threadline backup`` / ``restore``).

A copy is taken with SQLite's online backup API inside one read transaction on the source: in WAL mode
that transaction is a snapshot, so the copy is the database as of one moment while the server keeps
writing, and the copy never restarts. (Without it each step opens a transaction of its own, and a write
by another connection between two steps restarts the copy from the first page: under a steady stream of
log records a copy in steps never finished.)

Whether a process has the database open is asked of the locks SQLite itself holds: every connection to a
database in WAL mode holds a shared lock on the database file's lock-byte range for as long as it is open
(https://www.sqlite.org/fileformat.html#the_lock_byte_page, ``os_unix.c``), so a write lock on that range
is refused while any server, worker, log store process or command has the database open; held, it also
keeps new connections out while the files are swapped."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

# Where SQLite's unix VFS takes its file locks: the PENDING byte, then RESERVED, then the SHARED range.
_PENDING_BYTE = 0x40000000
_LOCK_START = _PENDING_BYTE
_LOCK_LENGTH = 2 + 510
# Pages copied per step of the backup API: a step is cheap (4 MiB at 4 KiB pages), so progress moves
# steadily without the per-step overhead mattering.
PAGES_PER_STEP = 1024

Report = Callable[[int, int], None]


class InUse(Exception):
    """A process has the database open."""


class NotADatabase(Exception):
    """The file is not a SQLite database, or not one of Threadline's."""


@dataclass(frozen=True)
class Copied:
    pages: int
    size: int


def _connect(path: Path) -> sqlite3.Connection:
    """Read-write without creating (``mode=rw``): a missing file is an error, not a new database."""
    return sqlite3.connect(
        f"file:{quote(str(path))}?mode=rw",
        uri=True,
        isolation_level=None,
        timeout=10,
        check_same_thread=False,
    )


def copy(source: Path, target: Path, report: Report) -> Copied:
    """A consistent copy of ``source`` as the single file ``target`` (rollback journal, no -wal beside
    it), reporting (pages copied, pages in all) after each step. ``target`` must not exist."""
    try:
        src = _connect(source)
    except sqlite3.Error as error:
        raise NotADatabase(f"it cannot be opened as a SQLite database ({error})") from error
    try:
        try:
            src.execute("BEGIN")
            src.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts here
        except sqlite3.DatabaseError as error:
            raise NotADatabase(f"it is not a SQLite database ({error})") from error
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            src.backup(
                dst,
                pages=PAGES_PER_STEP,
                progress=lambda _status, remaining, total: report(total - remaining, total),
            )
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, whatever the source used
            pages = int(dst.execute("PRAGMA page_count").fetchone()[0])
        finally:
            dst.close()
        src.execute("COMMIT")
    finally:
        src.close()
    with open(target, "rb") as written:
        os.fsync(written.fileno())
    return Copied(pages=pages, size=target.stat().st_size)


def check(path: Path) -> str:
    """The schema revision of a Threadline database after SQLite's quick integrity check, or
    ``NotADatabase`` saying what is wrong with the file."""
    try:
        connection = _connect(path)
        try:
            verdict = connection.execute("PRAGMA quick_check").fetchone()[0]
            if verdict != "ok":
                raise NotADatabase(f"the database is damaged (SQLite's quick_check: {verdict})")
            found = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
            ).fetchone()
            if found is None:
                raise NotADatabase("it is a SQLite database but not a Threadline one (no schema revision)")
            row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        raise NotADatabase(f"it is not a SQLite database ({error})") from error
    if row is None:
        raise NotADatabase("its schema revision is empty")
    return str(row[0])


def in_use(path: Path) -> bool:
    """Whether a process has the database at ``path`` open (a running server, among others)."""
    try:
        with exclusive(path):
            return False
    except InUse:
        return True


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """No other process has the database open, and none opens it until this ends (``InUse`` if one has).
    A missing file: nothing to hold.

    The lock is a POSIX record lock, which belongs to the process: while it is held, this process must not
    open the same file through SQLite (closing that connection would drop the lock)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        yield
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _LOCK_LENGTH, _LOCK_START)
        except OSError as error:
            raise InUse(str(path)) from error
        yield
    finally:
        os.close(fd)


def replace(database: Path, new: Path) -> None:
    """``new`` becomes ``database`` in one rename, the old database's -wal and -shm removed first (they
    belong to the old file: left beside the new one, SQLite would apply the old log to it). Call it inside
    ``exclusive(database)``."""
    for leftover in (Path(f"{database}-wal"), Path(f"{database}-shm"), Path(f"{database}-journal")):
        leftover.unlink(missing_ok=True)
    os.replace(new, database)
    directory = os.open(database.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)
