"""Every ``threadline`` process builds every command, so an import at a module's top is paid by all of them:
the client (threadline_client: httpx, pydantic, ~210 ms) only where a client command runs, the server
(SQLAlchemy, FastAPI) only where an operator command runs. Each test is one process of the real entry point
(``python -m threadline``) that reports, as it exits, which modules it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# `python -m threadline ARGS`, then the names of the loaded modules as the last line of stderr (the finally
# runs on the command's SystemExit too).
_PROBE = """
import json, runpy, sys
sys.argv = ["threadline", *sys.argv[1:]]
try:
    runpy.run_module("threadline", run_name="__main__", alter_sys=True)
finally:
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _run(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], env=env, capture_output=True, text=True, timeout=60
    )
    *_, loaded = result.stderr.splitlines()
    return result, {name.partition(".")[0] for name in json.loads(loaded)}


def test_help_builds_every_command_without_the_client_or_the_server(tmp_path: Path) -> None:
    """Typer turns every command's signature into options before it draws the top-level help, so a command
    annotated with a client type imported only for type checking would fail here, not just in its own test."""
    env = {"PATH": "/usr/bin:/bin", "THREADLINE_DATA_DIR": str(tmp_path), "COLUMNS": "120"}
    result, loaded = _run("--help", env=env)
    assert result.returncode == 0, result.stderr
    assert "threadline [OPTIONS] COMMAND [ARGS]..." in result.stdout
    assert loaded.isdisjoint({"threadline_client", "httpx", "sqlalchemy", "fastapi", "alembic"}), loaded


@pytest.mark.embedded
def test_an_operator_command_runs_without_the_client(empty_env: dict[str, str]) -> None:
    """``init`` does its whole work (the schema, the first organization and key) and never loads the client.
    One shape: the distributed one differs in its database driver, not in what the CLI imports."""
    result, loaded = _run("init", "--json", env=empty_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["secretKey"].startswith("sk_")
    assert "sqlalchemy" in loaded and "threadline_client" not in loaded, loaded
