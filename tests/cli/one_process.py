"""Several ``threadline`` commands run one after another in one interpreter, each with its own exit status,
stdout and stderr, for tests of what commands answer rather than of the entry point.

An operator command's process spends most of its CPU importing (the server's modules, ~1.5 s on the CI
machine), so a test of seven refusals paid for seven imports; here it pays for one. Each command still
runs as the entry point runs it: typer in standalone mode, its ``SystemExit`` taken as the exit status, an
uncaught exception as status 1 with its traceback on stderr, in the environment given and nothing else.
Nothing a command leaves behind is shared through the process but what is shared through the database,
which is what the commands act on anyway (tests/cli/test_startup.py holds the real entry point)."""

from __future__ import annotations

import json
import subprocess
import sys

_RUNNER = """
import contextlib, io, json, sys, traceback
from threadline.cli import app

answers = []
for args in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            app(args, prog_name="python -m threadline")
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        except Exception:
            traceback.print_exc()
            code = 1
    answers.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(answers))
"""


def threadline_each(
    *commands: tuple[str, ...], env: dict[str, str], timeout: float = 120
) -> list[subprocess.CompletedProcess[str]]:
    """Each command's result, in order, as ``tests.support.threadline(..., check=False)`` gives it (usage
    lines name ``python -m threadline``, as click names that entry point)."""
    ran = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps([list(command) for command in commands]),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert ran.returncode == 0, ran.stderr
    return [
        subprocess.CompletedProcess(["threadline", *command], code, stdout, stderr)
        for command, (code, stdout, stderr) in zip(commands, json.loads(ran.stdout), strict=True)
    ]
