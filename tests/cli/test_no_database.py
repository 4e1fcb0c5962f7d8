"""An operator command where there is no database says so in one line (where it looked, and how to get a
database there), exits 2 and creates nothing: not an empty ./.threadline followed by "no such table"."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.cli.one_process import threadline_each
from tests.support import threadline

# Every operator command that needs an existing database (init, migrate and restore may create one).
_NEEDS_A_DATABASE: list[tuple[str, ...]] = [
    ("orgs", "list"),
    ("orgs", "create", "Globex"),
    ("orgs", "set-limit", "org_x", "--streams", "3"),
    ("users", "create", "--org", "org_x", "--email", "a@example.com"),
    ("users", "set-password", "a@example.com"),
    ("billing", "grant", "org_x", "5"),
    ("keys", "mint", "--org", "org_x", "--name", "rescue"),
    ("serve", "--port", "1", "--intake-port", "2"),
    ("serve-intake", "--port", "1"),
    ("worker",),
    ("backup", "copy.db"),
]


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.args, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.embedded
def test_embedded_without_a_database(empty_env: dict[str, str], tmp_path: Path) -> None:
    """Every command in one process (tests/cli/one_process.py): each still answers on its own."""
    nowhere = tmp_path / "nowhere"
    results = threadline_each(*_NEEDS_A_DATABASE, env={**empty_env, "THREADLINE_DATA_DIR": str(nowhere)})
    for command, result in zip(_NEEDS_A_DATABASE, results, strict=True):
        assert _one_line(result) == (
            f"error: no Threadline database at {nowhere / 'threadline.db'}: run `threadline init` to create "
            "one there, or set THREADLINE_DATA_DIR to the directory that holds threadline.db"
        ), command
    assert not nowhere.exists()


@pytest.mark.embedded
def test_run_from_another_directory_creates_no_dot_threadline(
    empty_env: dict[str, str], tmp_path: Path
) -> None:
    """The default data directory is ./.threadline: run elsewhere, the command must not make one."""
    env = {k: v for k, v in empty_env.items() if k != "THREADLINE_DATA_DIR"}
    for command in (("orgs", "list"), ("keys", "mint", "--org", "org_x", "--name", "n")):
        result = subprocess.run(
            [sys.executable, "-m", "threadline", *command],
            env={**env, "PYTHONPATH": os.pathsep.join(sys.path)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert str(tmp_path / ".threadline" / "threadline.db") in _one_line(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.embedded
def test_a_file_that_is_not_a_threadline_database(empty_env: dict[str, str]) -> None:
    database = Path(empty_env["THREADLINE_DATA_DIR"]) / "threadline.db"
    database.touch()  # what earlier versions left behind: an empty file
    line = _one_line(threadline("orgs", "list", env=empty_env, check=False))
    assert line.startswith(
        f"error: {database} holds no Threadline schema (an empty database): run `threadline init`"
    )
    database.write_bytes(b"not a database at all, but long enough to have a header" * 20)
    line = _one_line(threadline("orgs", "list", env=empty_env, check=False))
    assert line.startswith(f"error: {database} is not a SQLite database (file is not a database)")
    assert sorted(p.name for p in database.parent.iterdir()) == ["threadline.db"]


@pytest.mark.embedded
def test_migrate_creates_and_says_so_then_commands_run(empty_env: dict[str, str]) -> None:
    database = Path(empty_env["THREADLINE_DATA_DIR"]) / "threadline.db"
    created = threadline("migrate", env=empty_env)
    assert created.stderr.strip() == (
        f"creating a new database at {database} (threadline init adds the first organization)"
    )
    assert created.stdout.startswith("database is up to date (") and "migrations applied in" in created.stdout
    assert threadline("orgs", "list", "--json", env=empty_env).stdout.strip() == "[]"
    again = threadline("migrate", env=empty_env)
    assert (again.stdout, again.stderr) == ("database is up to date\n", "")
    with closing(sqlite3.connect(database)) as connection:
        assert connection.execute("SELECT count(*) FROM organizations").fetchone() == (0,)


@pytest.mark.distributed
@pytest.mark.parametrize(
    "command", [("orgs", "list"), ("keys", "mint", "--org", "o", "--name", "n"), ("worker",)]
)
def test_postgres_database_without_the_schema(empty_env: dict[str, str], command: tuple[str, ...]) -> None:
    line = _one_line(threadline(*command, env=empty_env, check=False))
    name = empty_env["THREADLINE_DATABASE_URL"].rsplit("/", 1)[1]
    assert line == (
        f"error: the PostgreSQL database 127.0.0.1:5432/{name} holds no Threadline schema: run "
        "`threadline init` to create one there, or set THREADLINE_DATABASE_URL to the database that holds it"
    )
    assert "up to date" in threadline("migrate", env=empty_env).stdout  # migrate may create the schema
    assert threadline("orgs", "list", "--json", env=empty_env).stdout.strip() == "[]"
