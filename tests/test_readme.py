"""The README's examples, run as written against a real server, so they cannot rot: a command that fails,
or an answer other than the one the README shows, fails here instead of in a newcomer's first hour.

The shell blocks of the sections below run as one bash session, in order, in a directory whose
``.venv/bin/activate`` puts this checkout's ``threadline`` on the PATH (what ``scripts/serve.sh`` leaves).
Only the placeholders a reader fills in change: the keys the first run printed (``sk_…``, ``pk_…``) and the
ports, which are free ones here. A run of ``# `` lines right after a command is that command's answer:
``…`` stands for anything, the lines are joined as one text (an answer shown over two lines is one line of
JSON), and the rest must match exactly.
"""

from __future__ import annotations

import re
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support import init_database, running_server

pytestmark = pytest.mark.embedded  # the README's path: the embedded default

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("First requests", "Dashboard", "Stream tokens (browsers)")
_MARK = "\x1e"  # between the outputs of two commands; nothing the server sends contains it
_TIMED_OUT = 28  # curl's status when -m / --max-time ends a stream, as the README's live tail does


@dataclass
class Step:
    command: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.command)

    def pattern(self) -> re.Pattern[str]:
        """The answer shown, as a pattern of the whole output: ``…`` anything, line ends any whitespace."""
        parts = [
            r"[\s\S]*?".join(re.escape(piece) for piece in line.split("…"))
            for line in (line.removeprefix("#").strip() for line in self.answer)
        ]
        return re.compile(r"\s*" + r"\s*".join(parts) + r"\s*")


def shell_blocks(readme: str, section: str) -> list[str]:
    body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```$", body, flags=re.S | re.M)


def steps(script: str) -> list[Step]:
    """The commands of ``script`` with the answers shown under them. A command ends where its line does
    unless it continues (a trailing backslash, a quote still open); prose comments and blank lines end
    the answer before them and belong to no command."""
    found: list[Step] = []
    current: Step | None = None
    for line in script.splitlines():
        if current is not None and current.command and not _complete(current.text):
            current.command.append(line)
        elif line.startswith("#") and current is not None and current.command:
            current.answer.append(line)
        elif not line.strip() or line.startswith("#"):
            current = None
        else:
            current = Step([line])
            found.append(current)
    return found


def _complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command, comments=True)
    except ValueError:  # a quotation still open
        return False
    return True


def _session(readme: str, sk: str, pk: str, api_url: str, intake_url: str) -> tuple[str, list[Step]]:
    """The bash script of every block, each command preceded by a mark carrying the status of the one
    before it."""
    script = "\n".join(block for section in SECTIONS for block in shell_blocks(readme, section))
    found = steps(script)
    lines = ["exec 2>&1"]
    for n, step in enumerate(found):
        command = (
            step.text.replace("sk_…", sk)
            .replace("pk_…", pk)
            .replace("http://127.0.0.1:8080", api_url)
            .replace("http://127.0.0.1:8081", intake_url)
        )
        lines += [f"printf '\\n{_MARK}%s {n}{_MARK}\\n' $?", command]
    lines.append(f"printf '\\n{_MARK}%s end{_MARK}\\n' $?")
    return "\n".join(lines) + "\n", found


def _venv(directory: Path, env: dict[str, str]) -> None:
    """What ``scripts/serve.sh`` leaves in a checkout: ``.venv/bin/activate`` and ``threadline`` in it."""
    bin_dir = directory / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    launcher = bin_dir / "threadline"
    python, root = shlex.quote(sys.executable), shlex.quote(str(ROOT))
    launcher.write_text(f'#!/bin/sh\nPYTHONPATH={root} exec {python} -m threadline "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "activate").write_text(f"PATH={shlex.quote(str(bin_dir))}:$PATH\nexport PATH\n")
    env.pop("PYTHONPATH", None)


def test_the_steps_of_a_block_are_its_commands_and_their_answers() -> None:
    block = [
        "# prose",
        "A=1",
        "curl -d '{",
        '  "x": 1}\' \\',
        "  -H y",
        '# {"a":…,',
        '#  "b":2}',
        "",
        "# more prose",
        "B=2",
        "C=3",
    ]
    found = steps("\n".join(block))
    assert [(step.command, step.answer) for step in found] == [
        (["A=1"], []),
        (["curl -d '{", '  "x": 1}\' \\', "  -H y"], ['# {"a":…,', '#  "b":2}']),
        (["B=2"], []),
        (["C=3"], []),
    ]
    assert found[1].pattern().fullmatch('{"a":{"n": 1},"b":2}\n')
    assert not found[1].pattern().fullmatch('{"c":1,"b":2}')


def test_every_example_of_the_readme_runs_as_written(empty_env: dict[str, str], tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    created = init_database(empty_env)
    with running_server(empty_env) as server:
        script, found = _session(
            readme, created["secretKey"], created["publicKey"], server.api_url, server.intake_url
        )
        env = {**empty_env, "THREADLINE_BASE_URL": f"{server.api_url}/v1", "HOME": str(tmp_path)}
        env.pop("THREADLINE_API_KEY", None)
        _venv(tmp_path, env)
        result = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
        )
    pieces = result.stdout.split(_MARK)
    # pieces: [before, "status 0", output of step 0, "status 1", output of step 1, …, "status end", rest]
    outputs = pieces[2::2]
    statuses = [int(mark.split()[0]) for mark in pieces[1::2]][1:]
    assert len(statuses) == len(found), result.stdout[-3000:]
    problems = []
    for step, status, output in zip(found, statuses, outputs, strict=False):
        allowed = {0, _TIMED_OUT} if re.search(r"curl .*(-m |--max-time )", step.text) else {0}
        if status not in allowed:
            problems.append(f"{step.text}\nexited {status}:\n{output}")
        elif step.answer and not step.pattern().fullmatch(output):
            problems.append(f"{step.text}\nanswered:\n{output.strip()}\nnot:\n" + "\n".join(step.answer))
    assert not problems, "\n\n".join(problems)
