"""``threadline backup PATH`` and ``threadline restore PATH``: the embedded shape's database, copied out
while it serves and put back while nothing runs on it (``storage.backup`` says how both are safe).

The distributed shape's database is PostgreSQL's to copy: both commands refuse there and name
pg_dump and pg_restore (docs/operations.md)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from threadline.cli.operator import _settings
from threadline.cli.output import fail
from threadline.cli.progress import Progress, size_text
from threadline.kit.clock import Clock

if TYPE_CHECKING:
    from threadline.config import Settings

_POSTGRES_BACKUP = (
    "the database is PostgreSQL (THREADLINE_DATABASE_URL): back it up with PostgreSQL's own tools, "
    "pg_dump -Fc -f threadline.dump DBNAME (see docs/operations.md)"
)
_POSTGRES_RESTORE = (
    "the database is PostgreSQL (THREADLINE_DATABASE_URL): restore it with PostgreSQL's own tools, "
    "pg_restore -d NEW_EMPTY_DB threadline.dump (see docs/operations.md)"
)


def _database(settings: Settings, postgres: str) -> Path:
    from threadline.cli.preflight import sqlite_file

    if not settings.is_sqlite:
        fail(postgres)
    path = sqlite_file(settings)
    if path is None:
        fail("the database is in memory (THREADLINE_DATABASE_URL): there is no file to back up or restore")
    return path


def _partial(target: Path) -> Path:
    """A name beside ``target`` for the copy being written, renamed to ``target`` only once complete."""
    return target.with_name(f".{target.name}.partial-{os.getpid()}")


def backup(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="The file to write; an existing directory gets threadline-YYYYMMDDTHHMMSSZ.db inside.",
        ),
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace PATH if it is an existing file.")] = False,
) -> None:
    """Copy the embedded database to PATH, consistently, while the server keeps serving.

    The copy is one self-contained SQLite file, the database as of the moment the copy began; it appears
    at PATH only once complete. Progress is shown on a terminal. The distributed shape (PostgreSQL) is
    backed up with pg_dump instead."""
    from threadline.storage import backup as storage

    settings = _settings()
    source = _database(settings, _POSTGRES_BACKUP)
    if path.is_dir():
        path = path / f"threadline-{Clock().now():%Y%m%dT%H%M%SZ}.db"
    path = path.resolve()
    if path == source:
        fail("PATH is the database itself: give another file")
    if path.exists() and not force:
        fail(f"{path} already exists: give another path, or add --force to replace it")
    if not path.parent.is_dir():
        fail(f"{path.parent} is not a directory")
    partial = _partial(path)
    progress = Progress("backup")
    try:
        copied = storage.copy(source, partial, lambda done, total: progress.fraction(done, total, "pages"))
        revision = storage.check(partial)
        os.replace(partial, path)
    except storage.NotADatabase as error:
        fail(f"cannot back up {source}: {error}")
    except (OSError, sqlite3.Error) as error:
        fail(f"cannot write {path}: {getattr(error, 'strerror', None) or error}")
    finally:
        progress.done()
        partial.unlink(missing_ok=True)
    typer.echo(
        f"backed up {source} to {path}: {size_text(copied.size)}, {copied.pages:,} pages, schema revision "
        f"{revision}, in {progress.elapsed:.1f} s"
    )


def restore(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="A backup made by threadline backup.")],
    yes: Annotated[bool, typer.Option("--yes", help="Replace an existing database without asking.")] = False,
) -> None:
    """Replace the embedded database with the backup at PATH; refused while any process has it open.

    The backup is checked first (a SQLite database of a schema revision this version knows, undamaged),
    copied beside the database and swapped in with one rename, so the database is either the old one or
    the whole backup. Stop the server first. The distributed shape (PostgreSQL) is restored with
    pg_restore instead."""
    from threadline.storage import backup as storage

    source = path.resolve()
    if not source.is_file():
        fail(f"{source} is not a file")
    settings = _settings(create=True)
    database = _database(settings, _POSTGRES_RESTORE)
    if source == database:
        fail("PATH is the database itself: give a backup")
    if storage.in_use(database):
        fail(_in_use(database))
    if database.exists() and not yes:
        if not os.isatty(0):
            fail(f"{database} exists and would be replaced: add --yes to replace it")
        typer.confirm(f"Replace the database at {database} with {source}?", abort=True, err=True)
    known = _known_revisions()
    partial = _partial(database)
    progress = Progress("restore")
    try:
        copied = storage.copy(source, partial, lambda done, total: progress.fraction(done, total, "pages"))
        revision = storage.check(partial)
        if revision not in known:
            fail(
                f"{source} is of schema revision {revision}, which this version of Threadline does not know "
                f"(newest: {known[-1]}): restore it with the version that made it"
            )
        with storage.exclusive(database):
            storage.replace(database, partial)
    except storage.NotADatabase as error:
        fail(f"{source} cannot be restored: {error}")
    except storage.InUse:
        fail(_in_use(database))
    except (OSError, sqlite3.Error) as error:
        fail(f"cannot restore into {database}: {getattr(error, 'strerror', None) or error}")
    finally:
        progress.done()
        partial.unlink(missing_ok=True)
    typer.echo(
        f"restored {source} into {database}: {size_text(copied.size)}, {copied.pages:,} pages, schema "
        f"revision {revision}, in {progress.elapsed:.1f} s"
    )
    if revision != known[-1]:
        typer.echo(f"the backup's schema is older than this version's ({known[-1]}): run threadline migrate")


def _in_use(database: Path) -> str:
    return (
        f"{database} is open in another process (a running threadline serve, worker or command): stop it, "
        "then restore"
    )


def _known_revisions() -> list[str]:
    """Every schema revision of this version, oldest first."""
    from alembic.script import ScriptDirectory

    from threadline.storage.migrate import alembic_config

    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]


def register(app: typer.Typer) -> None:
    app.command()(backup)
    app.command()(restore)
