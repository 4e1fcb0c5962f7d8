"""A wrong database or Redis setting ends a command with one line naming the setting and the cause,
exit code 2, promptly: not a driver's traceback after a minute of retries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.own_time import run_timed
from tests.support import threadline

# What failed before took a minute (asyncpg's connect timeout) plus 30 s of rendering a traceback. On an
# idle machine each answer comes in about a second, interpreter start included; the connection attempts
# themselves are bounded at 4 s (cli.preflight). Counted in the command's own time (tests/own_time.py):
# on the wall clock a loaded machine once took 51 s.
_PROMPTLY = 30.0
_SERVE = ("serve", "--port", "1", "--intake-port", "2")


def _env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return {**env, "THREADLINE_DATA_DIR": str(tmp_path), **settings}


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("postgresql://postgres@127.0.0.1:5432/threadline_no_such_db", 'database "threadline_no_such_db"'),
        ("postgresql://threadline_no_such_role@127.0.0.1:5432/test", 'role "threadline_no_such_role"'),
        ("postgresql://postgres@127.0.0.1:1/test", "127.0.0.1:1/test"),
        ("mysql://someone@127.0.0.1/db", "'mysql'"),
        ("not a url at all", "is not a database URL"),
    ],
)
def test_bad_database_url_is_one_line_and_exit_2(tmp_path: Path, url: str, cause: str) -> None:
    _refused_in_one_line(tmp_path, ("migrate",), url, cause)


@pytest.mark.parametrize("command", [_SERVE, ("worker",)])
def test_serve_and_worker_check_the_database_first(tmp_path: Path, command: tuple[str, ...]) -> None:
    url = "postgresql://postgres@127.0.0.1:5432/threadline_no_such_db"
    _refused_in_one_line(tmp_path, command, url, 'database "threadline_no_such_db" does not exist')


def _timed(command: tuple[str, ...], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``threadline COMMAND``, which must end promptly."""
    result, seconds = run_timed([sys.executable, "-m", "threadline", *command], env, timeout=120)
    assert seconds < _PROMPTLY, f"took {seconds:.1f} s of its own: {result.stderr}"
    return result


def _refused_in_one_line(tmp_path: Path, command: tuple[str, ...], url: str, cause: str) -> None:
    result = _timed(command, _env(tmp_path, THREADLINE_DATABASE_URL=url))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: THREADLINE_DATABASE_URL"), result.stderr
    assert cause in lines[0]
    assert not list(tmp_path.iterdir())  # nothing created for a database elsewhere


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("redis://127.0.0.1:1/0", "cannot reach Redis at 127.0.0.1:1"),
        ("http://127.0.0.1/", "not a Redis URL"),
    ],
)
@pytest.mark.parametrize("command", [("serve", "--port", "1", "--intake-port", "2"), ("worker",)])
def test_bad_redis_url_is_one_line_and_exit_2(
    tmp_path: Path, url: str, cause: str, command: tuple[str, ...]
) -> None:
    result = _timed(command, _env(tmp_path, THREADLINE_REDIS_URL=url))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith("error: THREADLINE_REDIS_URL"), result.stderr
    assert cause in lines[0]


def test_an_unreadable_setting_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = threadline("migrate", env=_env(tmp_path, THREADLINE_MAX_CONCURRENT_RUNS="many"), check=False)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: THREADLINE_MAX_CONCURRENT_RUNS: Input should be a valid integer")
