"""Alembic environment: runs migrations on the same engine setup (and SQLite pragmas) as the service."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from threadline.kit.db import Database
from threadline.storage.tables import is_declared, metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=lambda _obj, name, type_, _reflected, _compare_to: is_declared(name, type_),
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    database = Database(url)
    try:
        await database.run_sync(_run)
    finally:
        await database.dispose()


asyncio.run(_run_async(config.get_main_option("sqlalchemy.url") or ""))
