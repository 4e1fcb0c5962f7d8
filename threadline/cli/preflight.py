"""Before an operator command touches its backends: the database and Redis the settings name must be
reachable, or one line names the setting and the cause and the command exits 2, within seconds. Without
this a bad URL surfaced as a framework traceback of hundreds of lines after up to a minute of retries.

Commands that need an existing database (every one but ``init``, ``migrate`` and ``restore``) also check
that it is there and holds Threadline's schema (``check_initialised``), without creating anything: run
from the wrong directory, a command used to create an empty ``./.threadline`` and then fail with "no such
table"."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import quote

from threadline.cli.output import fail

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from threadline.config import Settings

CONFIG_ERROR = 2
_CONNECT_SECONDS = 4.0


def check_database(settings: Settings) -> None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(settings.resolved_database_url)
    except ArgumentError:
        _refuse(
            "THREADLINE_DATABASE_URL is not a database URL: give postgresql://USER@HOST:PORT/NAME, or leave "
            "it unset for SQLite in THREADLINE_DATA_DIR"
        )
    backend = url.get_backend_name()
    if backend == "sqlite":
        return
    if backend != "postgresql":
        _refuse(
            f"THREADLINE_DATABASE_URL names {backend!r}: Threadline runs on PostgreSQL (postgresql://...) "
            "or, with the setting unset, on SQLite"
        )
    _ask_postgres(url, "SELECT 1")


def _ask_postgres(url: URL, query: str) -> object:
    """``query``'s one value, on a connection of its own, or one line saying why PostgreSQL could not be
    asked."""
    import asyncpg

    where = _where(url)

    async def probe() -> object:
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        connection = await asyncpg.connect(dsn, timeout=_CONNECT_SECONDS)
        try:
            return await connection.fetchval(query)
        finally:
            await connection.close()

    try:
        return asyncio.run(asyncio.wait_for(probe(), _CONNECT_SECONDS + 0.5))
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError, ValueError) as error:
        _refuse(f"THREADLINE_DATABASE_URL: cannot connect to PostgreSQL at {where}: {_cause(error)}")


def _where(url: URL) -> str:
    return f"{url.host or 'localhost'}:{url.port or 5432}/{url.database or ''}"


def sqlite_file(settings: Settings) -> Path | None:
    """The SQLite database file the settings name; None for PostgreSQL and for a database in memory."""
    from sqlalchemy.engine import make_url

    url = make_url(settings.resolved_database_url)
    if url.get_backend_name() != "sqlite":
        return None
    name = url.database or ""
    if name in ("", ":memory:") or name.startswith("file::memory:") or "mode=memory" in name:
        return None
    return Path(name).resolve()


def check_initialised(settings: Settings) -> None:
    """The database exists and holds Threadline's schema (its migrations table), or one line says where
    the command looked and how to get a database there; nothing is created either way."""
    path = sqlite_file(settings)
    if path is not None:
        _check_sqlite_file(path, settings)
    elif not settings.is_sqlite:
        _check_postgres_schema(settings)


def _sqlite_setting(settings: Settings) -> str:
    if settings.database_url is not None:
        return "THREADLINE_DATABASE_URL to the database's file"
    return "THREADLINE_DATA_DIR to the directory that holds threadline.db"


def _check_sqlite_file(path: Path, settings: Settings) -> None:
    if not path.is_file():
        _refuse(
            f"no Threadline database at {path}: run `threadline init` to create one there, or set "
            f"{_sqlite_setting(settings)}"
        )
    try:
        # mode=rw: never creates the file. (Not ro: a read-only connection to a database in WAL mode leaves
        # its -wal and -shm files behind; a read-write one removes them when it is the last to close.)
        connection = sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True, timeout=_CONNECT_SECONDS)
        try:
            found = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
            ).fetchone()
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        _refuse(f"{path} is not a SQLite database ({_cause(error)}); set {_sqlite_setting(settings)}")
    if found is None:
        _refuse(
            f"{path} holds no Threadline schema (an empty database): run `threadline init` to create one, "
            f"or set {_sqlite_setting(settings)}"
        )


def _check_postgres_schema(settings: Settings) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(settings.resolved_database_url)
    if not _ask_postgres(url, "SELECT to_regclass('alembic_version') IS NOT NULL"):
        _refuse(
            f"the PostgreSQL database {_where(url)} holds no Threadline schema: run `threadline init` to "
            "create one there, or set THREADLINE_DATABASE_URL to the database that holds it"
        )


def check_redis(settings: Settings) -> None:
    if settings.redis_url is None:
        return
    from redis import Redis
    from redis.exceptions import RedisError

    try:
        client = Redis.from_url(
            settings.redis_url.get_secret_value(),
            socket_connect_timeout=_CONNECT_SECONDS,
            socket_timeout=_CONNECT_SECONDS,
        )
    except ValueError as error:
        _refuse(f"THREADLINE_REDIS_URL is not a Redis URL (redis://HOST:PORT/DB): {_cause(error)}")
    address = client.connection_pool.connection_kwargs
    where = f"{address.get('host', 'localhost')}:{address.get('port', 6379)}"
    try:
        client.ping()
    except (RedisError, OSError) as error:
        _refuse(f"THREADLINE_REDIS_URL: cannot reach Redis at {where}: {_cause(error)}")
    finally:
        client.close()


def _cause(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _refuse(message: str) -> NoReturn:
    fail(message, CONFIG_ERROR)
