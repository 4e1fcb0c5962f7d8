"""Strings a regular expression matches, for the documents ``agent.schema_instance`` builds: a ``pattern``
of literals, classes (``[a-z]``, ``\\d``, ``\\w``, negated ones), groups, alternatives and repeats.

Rendered from Python's own parse of the pattern (``re._parser``, which the validator's ``re`` uses too, so
both read the pattern alike); what it does not know (look-arounds, back-references) ends the candidates,
and the document's check then says the pattern was not matched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any


def matches(pattern: str, low: int, variant: int) -> Iterator[str]:
    """Strings ``pattern`` matches, its repeats shortest first, then longer (to reach ``minLength``, ``low``);
    ``variant`` picks among alternatives (items of an array that must differ). Nothing when the pattern is
    beyond the simple subset."""
    try:
        from re import _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern)
    except (re.error, ImportError, RecursionError):
        return
    for extra in (0, 1, 2, 4, 8, 16, max(low, 1)):
        try:
            yield _Regex(extra, variant).render(parsed)
        except _Beyond:
            return


class _Beyond(Exception):
    """A construct the pattern renderer does not know (look-arounds, back-references)."""


class _Regex:
    def __init__(self, extra: int, variant: int) -> None:
        self._extra = extra
        self._variant = variant

    def render(self, items: Any) -> str:
        from re import _constants as c  # type: ignore[attr-defined]

        out = []
        for op, arg in items:
            if op is c.LITERAL:
                out.append(chr(arg))
            elif op is c.ANY:
                out.append("a")
            elif op is c.IN:
                out.append(self._in(arg, c))
            elif op is c.CATEGORY:
                out.append(self._in([(op, arg)], c))
            elif op is c.NOT_LITERAL:
                out.append("a" if arg != ord("a") else "b")
            elif op is c.BRANCH:
                branches = arg[1]
                out.append(self.render(branches[self._variant % len(branches)]))
            elif op is c.SUBPATTERN:
                out.append(self.render(arg[-1]))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
                lowest, highest, body = arg
                count = lowest + self._extra if highest is c.MAXREPEAT else min(lowest + self._extra, highest)
                out.append("".join(self.render(body) for _ in range(count)))
            elif op is c.AT:
                continue
            else:
                raise _Beyond(str(op))
        return "".join(out)

    def _in(self, members: Any, c: Any) -> str:
        negated = any(op is c.NEGATE for op, _arg in members)
        for ch in ("a", "0", " ", "A", "_", "-", "b", "1", "x", "Z", "9", "."):
            if _member(ch, members, c) != negated:
                return ch
        raise _Beyond("a class with no simple member")


def _member(ch: str, members: Any, c: Any) -> bool:
    code = ord(ch)
    for op, arg in members:
        if op is c.LITERAL and arg == code:
            return True
        if op is c.RANGE and arg[0] <= code <= arg[1]:
            return True
        if op is c.CATEGORY and str(arg) in _CATEGORIES and _CATEGORIES[str(arg)](ch):
            return True
    return False


_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_NOT_DIGIT": lambda ch: not ch.isdigit(),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda ch: not ch.isspace(),
    "CATEGORY_WORD": lambda ch: ch.isalnum() or ch == "_",
    "CATEGORY_NOT_WORD": lambda ch: not (ch.isalnum() or ch == "_"),
}
