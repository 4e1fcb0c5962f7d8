"""The classification of failures into outages of a dependency (``kit.faults``), on real drivers' errors."""

from __future__ import annotations

import errno
import sqlite3

import pytest
import sqlalchemy as sa
from redis.exceptions import ConnectionError as RedisConnectionError

from threadline.kit import faults
from threadline.kit.errors import BadRequest, ServiceUnavailable


def _sqlite_error(*statements: str) -> sa.exc.DBAPIError:
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        for statement in statements[:-1]:
            conn.execute(sa.text(statement))
        with pytest.raises(sa.exc.DBAPIError) as raised:
            conn.execute(sa.text(statements[-1]))
    return raised.value


def test_a_full_sqlite_database_is_the_disk() -> None:
    full = _sqlite_error(
        "PRAGMA page_size = 512",
        "CREATE TABLE t (x TEXT)",
        "PRAGMA max_page_count = 3",
        "INSERT INTO t VALUES (printf('%.2000c', 'x'))",
    )
    assert "database or disk is full" in str(full)
    assert faults.dependency_of(full) == "disk"


def test_bugs_and_refusals_are_no_outage() -> None:
    assert faults.dependency_of(_sqlite_error("SELECT * FROM no_such_table")) is None
    assert (
        faults.dependency_of(
            _sqlite_error("CREATE TABLE t (x UNIQUE)", "INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (1)")
        )
        is None
    )
    assert faults.dependency_of(ValueError("database or disk is full")) is None
    assert faults.dependency_of(BadRequest("database or disk is full")) is None


def test_what_the_drivers_say_when_a_server_is_away() -> None:
    assert faults.dependency_of(RedisConnectionError("Connection refused")) == "redis"
    assert faults.dependency_of(ConnectionRefusedError(errno.ECONNREFUSED, "refused")) == "database"
    assert faults.dependency_of(OSError(errno.ENOSPC, "No space left on device")) == "disk"
    wrapped = RuntimeError("while committing")
    wrapped.__cause__ = sqlite3.OperationalError("database is locked")  # re-created: no error code
    assert faults.dependency_of(wrapped) == "database"


def test_an_answered_outage_is_heard_by_the_listeners() -> None:
    heard: list[str] = []
    before = list(faults._listeners)  # the metrics' listener stays
    faults.on_dependency_error(lambda dependency, _exc: heard.append(dependency))
    try:
        with pytest.raises(ServiceUnavailable, match="Redis is unreachable"), faults.outages_answered_503():
            raise RedisConnectionError("gone")
        with pytest.raises(KeyError), faults.outages_answered_503():
            raise KeyError("a bug stays a bug")
    finally:
        faults._listeners[:] = before
    assert heard == ["redis"]


async def test_riding_out_retries_outages_only_and_for_a_while() -> None:
    attempts: list[bool] = []

    async def flaky(retry: bool) -> str:
        attempts.append(retry)
        if len(attempts) < 3:
            raise ConnectionResetError(errno.ECONNRESET, "reset")
        return "done"

    assert await faults.riding_out(flaky, within=5, what="test") == "done"
    assert attempts == [False, True, True]

    async def broken(_retry: bool) -> None:
        raise ConnectionResetError(errno.ECONNRESET, "reset")

    with pytest.raises(ConnectionResetError):
        await faults.riding_out(broken, within=0.2, what="test")

    async def buggy(_retry: bool) -> None:
        attempts.append(True)
        raise KeyError("bug")

    before = len(attempts)
    with pytest.raises(KeyError):
        await faults.riding_out(buggy, within=5, what="test")
    assert len(attempts) == before + 1
