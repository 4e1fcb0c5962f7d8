"""The one answer to "is this failure a dependency that is down, and which?".

A request, a stream, a dashboard page or a run that fails because PostgreSQL restarts, Redis is away or
the disk is full is not a bug: it is answered 503 ``DEPENDENCY_DOWN`` (the client retries) and a run
retries, where a bug is a 500 and a run's ``INTERNAL_ERROR``. Every place that tells the two apart asks
``dependency_of``, so a driver's new way of saying "the server went away" is taught here once; and every
place that answers an outage builds its error with ``unavailable``, which tells the listeners (a metrics
counter of dependency errors by dependency) what happened."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

import sqlalchemy as sa
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException

from threadline.kit.errors import Reason, ServiceUnavailable

log = logging.getLogger(__name__)

Dependency = Literal["database", "redis", "disk"]

# SQLSTATE classes and codes of an unavailable PostgreSQL server, as opposed to a refused statement:
# 08 connection exceptions, 53 insufficient resources (53100 disk full), 57P0x shutting down / starting up
# (57014, a cancelled statement, is a timeout the caller chose), 58 system and I/O errors.
_PG_DOWN_CLASSES = ("08", "53", "58")
_PG_DOWN_CODES = frozenset({"57P01", "57P02", "57P03", "57P04", "57P05"})
_PG_DISK_FULL = "53100"
# asyncpg's own errors without a SQLSTATE: a connection closed under a statement, or lost.
_ASYNCPG_CLOSED = ("closed", "connection lost")
# SQLite's primary result codes of a database that cannot be used now (busy, locked, I/O, cannot open);
# the others (no such table, constraint, misuse) are bugs. SQLITE_FULL is the disk.
_SQLITE_DOWN = frozenset({5, 6, 10, 14})
_SQLITE_FULL = 13
_DISK_FULL_TEXT = "database or disk is full"

DependencyListener = Callable[[Dependency, BaseException], None]
_listeners: list[DependencyListener] = []


def on_dependency_error(listener: DependencyListener) -> None:
    """Call ``listener`` with the dependency each time an outage is met: answered 503, retried by a run, or
    ending one (a metrics counter's hook)."""
    _listeners.append(listener)


def report(dependency: Dependency, exc: BaseException) -> None:
    """Tell the listeners an outage of ``dependency`` was met (``unavailable`` and ``riding_out`` do)."""
    for listener in _listeners:
        listener(dependency, exc)


def _one(exc: BaseException) -> Dependency | None:
    """What ``exc`` alone says, without what it wraps."""
    if isinstance(exc, RedisError):
        return "redis"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk"
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code == _SQLITE_FULL or _DISK_FULL_TEXT in str(exc):
            return "disk"
        if code is None:  # re-created from the log store's answer: only its type is known
            return "database" if isinstance(exc, sqlite3.OperationalError) else None
        return "database" if code & 0xFF in _SQLITE_DOWN else None
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str):
        if sqlstate == _PG_DISK_FULL:
            return "disk"
        return "database" if sqlstate.startswith(_PG_DOWN_CLASSES) or sqlstate in _PG_DOWN_CODES else None
    if type(exc).__module__.startswith("asyncpg") and any(t in str(exc) for t in _ASYNCPG_CLOSED):
        return "database"
    if isinstance(exc, (OSError, TimeoutError)):
        return "database"
    return None


def dependency_of(exc: BaseException) -> Dependency | None:
    """Which dependency ``exc`` says is down (``"database"``, ``"redis"``, ``"disk"``), or None for a bug
    or a refusal (a constraint, a syntax error): those keep their own answers. A driver's wrapper is judged
    by what it wraps (SQLAlchemy's ``orig``, a ``raise ... from``), or by its own word that the connection
    was lost."""
    if isinstance(exc, HTTPException):  # an answer already decided (``ApiError``), not a failure
        return None
    found: Dependency | None = None
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending and len(seen) < 8:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        orig = getattr(current, "orig", None)
        if isinstance(current, sa.exc.DBAPIError) and isinstance(orig, BaseException):
            if current.connection_invalidated:
                found = found or "database"
            pending.append(orig)
            continue
        one = _one(current)
        if one == "disk":
            return one
        found = found or one
        if current.__cause__ is not None:
            pending.append(current.__cause__)
    return found


def unavailable(exc: BaseException, dependency: Dependency | None = None) -> ServiceUnavailable:
    """The 503 answering an outage of ``dependency`` (classified from ``exc`` when not given); listeners
    hear of it. ``exc`` must be an outage: ask ``dependency_of`` first."""
    dependency = dependency or dependency_of(exc) or "database"
    report(dependency, exc)
    if dependency == "disk":
        message = "The server's disk is full; nothing was written. Retry once space is freed."
    elif dependency == "redis":
        message = "Redis is unreachable; nothing was acknowledged. Retry shortly."
    else:
        message = "The database is unreachable; nothing was acknowledged. Retry shortly."
    return ServiceUnavailable(message, reason=Reason.DEPENDENCY_DOWN)


@contextmanager
def outages_answered_503() -> Iterator[None]:
    """Inside, an outage of a dependency leaves as ``ServiceUnavailable``; anything else as it was."""
    try:
        yield
    except Exception as exc:
        dependency = dependency_of(exc)
        if dependency is None:
            raise
        raise unavailable(exc, dependency) from exc


# Free space under which the embedded shape says it cannot write: a write needs room for its pages and
# their copies in the write-ahead log, and SQLite answers "database or disk is full" well before zero.
DISK_RESERVE_BYTES = 1 << 20


def check_disk_room(directory: Path, reserve: int = DISK_RESERVE_BYTES) -> None:
    """Raise ``OSError(ENOSPC)`` when the filesystem holding ``directory`` has less than ``reserve``
    bytes free for this process (readiness: a full disk answers every write with an error)."""
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    if free < reserve:
        raise OSError(errno.ENOSPC, f"{free} bytes free on the data directory's filesystem")


T = TypeVar("T")
_FIRST_RETRY_SECONDS = 0.05
_LONGEST_RETRY_SECONDS = 1.0


async def riding_out(attempt: Callable[[bool], Awaitable[T]], *, within: float, what: str) -> T:
    """``attempt()`` again, after a short and growing pause, while it fails on an outage and ``within``
    seconds have not passed; then its failure is raised. ``attempt`` learns whether it is a retry (an
    outage in the middle of a COMMIT leaves unknown whether it landed, and a retry checks first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    pause = _FIRST_RETRY_SECONDS
    retry = False
    while True:
        try:
            return await attempt(retry)
        except Exception as exc:
            dependency = dependency_of(exc)
            if dependency is None:
                raise
            report(dependency, exc)
            if loop.time() + pause > deadline:
                raise
            log.warning("%s: %s unavailable, retrying in %.2f s: %r", what, dependency, pause, exc)
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_RETRY_SECONDS)
        retry = True
