"""``threadline backup`` / ``restore`` on the embedded shape: a consistent copy while the server serves
and writes; restore refused while a process has the database open, checked before it replaces anything,
and atomic. On PostgreSQL both refuse and name pg_dump / pg_restore. Progress shows on a terminal only."""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory

from tests.support import running_server, threadline
from threadline.storage.migrate import alembic_config

# The newest migration: these tests hold for whichever it is.
_HEAD = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
_COUNT = int(str(_HEAD))

# What `threadline init` leaves in the data dir: the database and the key of secrets at rest (docs/tools.md).
DATA_DIR_FILES = ["encryption.key", "threadline.db"]


def _count(database: Path) -> int:
    # Closed at once (a `with` on a connection only commits): an open connection is a process using the
    # database, which restore refuses.
    with closing(sqlite3.connect(database)) as connection:
        return int(connection.execute("SELECT count(*) FROM log_records").fetchone()[0])


def _revision(database: Path, revision: str) -> None:
    with closing(sqlite3.connect(database)) as connection, connection:
        connection.execute("UPDATE alembic_version SET version_num = ?", (revision,))


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``threadline ARGS`` with standard error on a pseudo-terminal: (exit status, stdout, the terminal's
    text)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "threadline", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=terminal,
        text=True,
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    stdout = process.stdout.read() if process.stdout else ""
    return process.wait(timeout=60), stdout, shown.decode()


@pytest.mark.embedded
def test_backup_while_serving_and_writing_then_restore(empty_env: dict[str, str], tmp_path: Path) -> None:
    boot = json.loads(threadline("init", "--json", env=empty_env).stdout)
    org_id = boot["organization"]["id"]
    threadline("orgs", "set-limit", org_id, "--requests-per-minute", "1000000", env=empty_env)
    database = Path(empty_env["THREADLINE_DATA_DIR"]) / "threadline.db"
    public = {"x-service-key": boot["publicKey"]}
    copy = tmp_path / "copy.db"
    stop = threading.Event()
    sent: list[int] = []

    with running_server(empty_env) as server:

        def write() -> None:
            with httpx.Client(base_url=server.intake_url, timeout=30) as http:
                while not stop.is_set():
                    batch = [
                        {"message": f"record {len(sent)}-{i}", "attributes": {"pad": "x" * 500}}
                        for i in range(50)
                    ]
                    assert http.post("/v1/logs", json=batch, headers=public).status_code == 202
                    sent.append(len(batch))

        writer = threading.Thread(target=write)
        writer.start()
        try:
            while sum(sent) < 2000:  # a database of a few MB, still being written to during the copy
                time.sleep(0.05)
            backed_up = threadline("backup", str(copy), env=empty_env)
            during = sum(sent)
            while sum(sent) < during + 500:  # and written to after it
                time.sleep(0.05)
        finally:
            stop.set()
            writer.join()
        assert backed_up.stderr == ""  # no terminal: no progress, only the summary
        assert backed_up.stdout.startswith(f"backed up {database} to {copy}: ")
        assert f"schema revision {_HEAD}" in backed_up.stdout
        with closing(sqlite3.connect(copy)) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # one file
        in_copy = _count(copy)
        assert 2000 <= in_copy <= during
        assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db"]  # no partial file left

        refused = threadline("restore", str(copy), "--yes", env=empty_env, check=False)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f"error: {database} is open in another process (a running threadline serve, worker or command): "
            "stop it, then restore"
        )
        # Nothing was replaced: every acknowledged record is still there.
        secret = {"Authorization": f"Bearer {boot['secretKey']}"}
        records = httpx.get(f"{server.api_url}/v1/logs", params={"limit": 1}, headers=secret).json()
        assert records["data"][0]["message"].startswith("record ")
        assert server.stop(signal.SIGTERM) == 0
    total = _count(database)
    assert total == sum(sent) > in_copy

    not_asked = threadline("restore", str(copy), env=empty_env, check=False)
    assert not_asked.returncode == 1 and "add --yes to replace it" in not_asked.stderr
    restored = threadline("restore", str(copy), "--yes", env=empty_env)
    assert restored.stdout.startswith(f"restored {copy} into {database}: ")
    assert _count(database) == in_copy
    assert not Path(f"{database}-wal").exists()
    assert sorted(p.name for p in database.parent.iterdir()) == DATA_DIR_FILES
    with running_server(empty_env) as server:
        me = httpx.get(f"{server.api_url}/v1/me", headers={"Authorization": f"Bearer {boot['secretKey']}"})
        assert me.status_code == 200
        assert server.stop(signal.SIGTERM) == 0


@pytest.mark.embedded
def test_restore_checks_the_backup_first(empty_env: dict[str, str], tmp_path: Path) -> None:
    threadline("init", env=empty_env)
    database = Path(empty_env["THREADLINE_DATA_DIR"]) / "threadline.db"
    before = database.read_bytes()
    good = tmp_path / "good.db"
    threadline("backup", str(good), env=empty_env)

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"definitely not SQLite " * 100)
    foreign = tmp_path / "foreign.db"
    with closing(sqlite3.connect(foreign)) as connection:
        connection.execute("CREATE TABLE things (x)")
    newer = tmp_path / "newer.db"
    shutil.copy(good, newer)
    _revision(newer, "9999")
    refusals = [
        (junk, "is not a SQLite database"),
        (foreign, "is a SQLite database but not a Threadline one"),
        (
            newer,
            f"is of schema revision 9999, which this version of Threadline does not know (newest: {_HEAD})",
        ),
        (tmp_path / "missing.db", "is not a file"),
    ]
    for backup, cause in refusals:
        result = threadline("restore", str(backup), "--yes", env=empty_env, check=False)
        assert result.returncode == 1 and cause in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert database.read_bytes() == before  # untouched
        assert sorted(p.name for p in database.parent.iterdir()) == DATA_DIR_FILES

    older = tmp_path / "older.db"
    shutil.copy(good, older)
    _revision(older, "0010")
    restored = threadline("restore", str(older), "--yes", env=empty_env)
    assert restored.stdout.splitlines()[-1] == (
        f"the backup's schema is older than this version's ({_HEAD}): run threadline migrate"
    )
    serve = threadline("serve", "--port", "1", "--intake-port", "2", env=empty_env, check=False)
    assert serve.returncode == 1 and "threadline migrate" in serve.stderr


@pytest.mark.embedded
def test_restore_into_an_empty_data_dir_and_backup_refusals(
    empty_env: dict[str, str], tmp_path: Path
) -> None:
    threadline("init", env=empty_env)
    backups = tmp_path / "backups"
    backups.mkdir()
    first = threadline("backup", str(backups), env=empty_env)  # a directory: a dated file inside
    (made,) = backups.iterdir()
    assert made.name.startswith("threadline-") and made.suffix == ".db" and str(made) in first.stdout
    again = threadline("backup", str(made), env=empty_env, check=False)
    assert again.returncode == 1 and "already exists" in again.stderr and "--force" in again.stderr
    threadline("backup", str(made), "--force", env=empty_env)
    itself = Path(empty_env["THREADLINE_DATA_DIR"]) / "threadline.db"
    assert (
        "the database itself"
        in threadline("backup", str(itself), "--force", env=empty_env, check=False).stderr
    )

    elsewhere = tmp_path / "new-home"
    env = {**empty_env, "THREADLINE_DATA_DIR": str(elsewhere)}
    threadline("restore", str(made), env=env)  # nothing to replace: no --yes needed
    assert json.loads(threadline("orgs", "list", "--json", env=env).stdout)[0]["name"] == "default"


@pytest.mark.embedded
def test_progress_on_a_terminal(empty_env: dict[str, str], tmp_path: Path) -> None:
    status, stdout, shown = _on_a_terminal(["migrate"], empty_env)
    assert status == 0 and stdout.startswith(f"database is up to date ({_COUNT} migrations applied")
    assert f"migrate: 0001 (1 of {_COUNT}) " in shown and f"migrate: {_HEAD} ({_COUNT} of {_COUNT}) " in shown
    threadline("init", env=empty_env)
    status, stdout, shown = _on_a_terminal(["backup", str(tmp_path / "b.db")], empty_env)
    assert status == 0 and stdout.startswith("backed up ")
    assert "backup: 100% (" in shown and " pages)" in shown
    status, stdout, shown = _on_a_terminal(["restore", str(tmp_path / "b.db"), "--yes"], empty_env)
    assert status == 0 and "restore: 100% (" in shown and stdout.startswith("restored ")


@pytest.mark.distributed
def test_postgres_points_at_its_own_tools(empty_env: dict[str, str], tmp_path: Path) -> None:
    threadline("init", env=empty_env)
    for command, tool in (("backup", "pg_dump -Fc"), ("restore", "pg_restore -d")):
        path = tmp_path / "x.db"
        path.touch()
        result = threadline(
            command, str(path), "--yes" if command == "restore" else "--force", env=empty_env, check=False
        )
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "the database is PostgreSQL" in lines[0] and tool in lines[0]
        assert "docs/operations.md" in lines[0]
