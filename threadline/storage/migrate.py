"""Running migrations from code (the CLI, tests), without an ``alembic.ini`` on disk."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from threadline.kit.db import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Blocking, and starts its own event loop: from async code, call it in a thread."""
    command.upgrade(alembic_config(database_url), revision)


async def is_current(db: Database) -> bool:
    """Whether the schema is at the newest migration (``serve`` refuses to run on an old one)."""
    head = ScriptDirectory.from_config(alembic_config(db.url)).get_current_head()

    def current(conn: Connection) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    return await db.run_sync(current) == head
