"""Before an operator command touches its backends: the database and Redis the settings name must be
reachable, or one line names the setting and the cause and the command exits 2, within seconds. Without
this a bad URL surfaced as a framework traceback of hundreds of lines after up to a minute of retries."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, NoReturn

from threadline.cli.output import fail

if TYPE_CHECKING:
    from threadline.config import Settings

CONFIG_ERROR = 2
_CONNECT_SECONDS = 4.0


def check_database(settings: Settings) -> None:
    import asyncpg
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
    where = f"{url.host or 'localhost'}:{url.port or 5432}/{url.database or ''}"

    async def probe() -> None:
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        connection = await asyncpg.connect(dsn, timeout=_CONNECT_SECONDS)
        await connection.close()

    try:
        asyncio.run(asyncio.wait_for(probe(), _CONNECT_SECONDS + 0.5))
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError, ValueError) as error:
        _refuse(f"THREADLINE_DATABASE_URL: cannot connect to PostgreSQL at {where}: {_cause(error)}")


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
