"""Printing for the CLI: JSON for machines, short lines for people, errors on stderr with exit codes."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer


def emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2))


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)
