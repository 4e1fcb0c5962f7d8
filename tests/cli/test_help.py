"""The operator commands' help reads like a Unix command's: real argument names (ORG_ID, not {org_id}),
no type column beside flags (<bool>) or text arguments (<str>), no reStructuredText markup (``x``)."""

from __future__ import annotations

import re

from tests.cli.one_process import threadline_each
from tests.support import threadline

_OPERATOR = [
    (),
    ("init",),
    ("migrate",),
    ("serve",),
    ("serve-intake",),
    ("worker",),
    ("openapi",),
    ("backup",),
    ("restore",),
    ("orgs", "create"),
    ("orgs", "list"),
    ("orgs", "set-limit"),
    ("users", "create"),
    ("users", "set-password"),
    ("billing", "grant"),
    ("keys", "mint"),
]
_USAGE = {
    ("orgs", "create"): "orgs create [OPTIONS] NAME",
    ("orgs", "set-limit"): "orgs set-limit [OPTIONS] ORG_ID",
    ("billing", "grant"): "billing grant [OPTIONS] ORG_ID AMOUNT",
    ("users", "set-password"): "users set-password [OPTIONS] EMAIL",
    ("backup",): "backup [OPTIONS] PATH",
    ("restore",): "restore [OPTIONS] PATH",
}


def test_operator_help_is_plain() -> None:
    """Every screen drawn in one process (tests/cli/one_process.py); the top level's through the entry point
    too, to hold them the same."""
    env = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "PATH": "/usr/bin:/bin"}
    screens = threadline_each(*((*command, "--help") for command in _OPERATOR), env=env)
    for command, screen in zip(_OPERATOR, screens, strict=True):
        assert screen.returncode == 0, (command, screen.stderr)
        shown = screen.stdout
        assert "<bool>" not in shown and "<str>" not in shown and "<path>" not in shown
        assert not re.search(r"\{\w+\}", shown), shown
        assert "``" not in shown and "`" not in shown, shown
        assert re.search(r"--help\s+Show this message and exit", shown)
        if command in _USAGE:
            assert _USAGE[command] in shown, shown
    assert threadline("--help", env=env).stdout == screens[0].stdout
