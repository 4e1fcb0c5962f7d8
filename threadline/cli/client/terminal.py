"""Text for people at a terminal: search matches highlighted (the API marks them with ``<mark>``, which is
HTML), log levels in colour. On a terminal only: piped output stays plain text, with no escape codes and
no markup, so that grep and files see the words themselves."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

import typer

_MARK = re.compile(r"<mark>(.*?)</mark>", re.DOTALL)
_LEVEL_STYLES: dict[str, dict[str, Any]] = {
    "trace": {"dim": True},
    "debug": {"dim": True},
    "info": {"fg": "green"},
    "warn": {"fg": "yellow"},
    "error": {"fg": "red"},
    "fatal": {"fg": "red", "bold": True},
}


def on_terminal() -> bool:
    return sys.stdout.isatty()


def _match(text: str) -> str:
    return typer.style(text, bold=True, fg="yellow") if on_terminal() else text


def highlighted(snippet: str) -> str:
    """The snippet with its matches in bold colour on a terminal, the marks removed when piped."""
    return _MARK.sub(lambda found: _match(found[1]), snippet)


def matched_metadata(snippet: str, metadata: Mapping[str, Any]) -> list[str]:
    """``key=value`` of each metadata value holding a match of the snippet (a thread search reads the
    title and the metadata values: this says which value matched), the match highlighted."""
    words = {found[1].lower() for found in _MARK.finditer(snippet) if found[1].strip()}
    labelled: list[str] = []
    for key, value in metadata.items():
        text = str(value)
        hits = [word for word in words if word in text.lower()]
        if hits:
            pattern = re.compile(
                "|".join(re.escape(word) for word in sorted(hits, key=len, reverse=True)), re.I
            )
            labelled.append(f"{key}={pattern.sub(lambda found: _match(found[0]), text)}")
    return labelled


def level(name: str) -> str:
    """A log level, padded, in its colour on a terminal."""
    padded = f"{name:<5}"
    return typer.style(padded, **_LEVEL_STYLES.get(name, {})) if on_terminal() else padded


def dim(text: str) -> str:
    return typer.style(text, dim=True) if on_terminal() else text
