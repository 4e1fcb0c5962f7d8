"""``threadline migrate``: the pending migrations applied one at a time, each named as it runs.

One at a time rather than in one call so a long migration on a large database is seen as it advances
(which step, how long each took), and a failure names the step; each step commits on its own, so the
steps before a failure stay applied and a second ``migrate`` resumes from there."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import typer

from threadline.cli.output import fail
from threadline.cli.progress import Progress

if TYPE_CHECKING:
    from alembic.script import Script

    from threadline.config import Settings


def pending(settings: Settings) -> list[Script]:
    """The migrations the database lacks, oldest first."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy.engine import Connection

    from threadline.kit.db import Database
    from threadline.storage.migrate import alembic_config

    url = settings.resolved_database_url

    def revision(conn: Connection) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    async def current() -> str | None:
        db = Database(url)
        try:
            return await db.run_sync(revision)
        finally:
            await db.dispose()

    scripts = ScriptDirectory.from_config(alembic_config(url))
    at = asyncio.run(current())
    return list(reversed(list(scripts.iterate_revisions("head", at or "base"))))


def apply(settings: Settings) -> int:
    """Every pending migration, each announced on a terminal; how many were applied."""
    import sqlalchemy as sa

    from threadline.storage import migrate as migrations

    progress = Progress("migrate")
    try:
        steps = pending(settings)
        for number, script in enumerate(steps, 1):
            title = (script.doc or "").strip().splitlines()[0] if script.doc else ""
            progress.line(f"{script.revision} ({number} of {len(steps)}) {title}".rstrip())
            started = time.monotonic()
            migrations.upgrade(settings.resolved_database_url, script.revision)
            if time.monotonic() - started >= 1:
                progress.line(f"{script.revision} took {time.monotonic() - started:.1f} s")
    except (OSError, sa.exc.OperationalError, sa.exc.InterfaceError) as error:
        progress.done()
        fail(f"cannot migrate the database: {error}")
    progress.done()
    return len(steps)


def summary(applied: int, seconds: float) -> None:
    if applied:
        noun = "migration" if applied == 1 else "migrations"
        typer.echo(f"database is up to date ({applied} {noun} applied in {seconds:.1f} s)")
    else:
        typer.echo("database is up to date")
