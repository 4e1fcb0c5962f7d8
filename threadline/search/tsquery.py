"""PostgreSQL's ``tsquery`` text, read back into a tree, so that our own postings (``search/postings.py``)
answer exactly what ``search_vector @@ query`` answers.

The query is compiled and normalised by PostgreSQL itself (``search/postgres.py``: stemming, stop words,
the short-word rule); we read only its printed form, ``tsqueryout``: operands ``'lexeme'`` with an
optional ``:*`` (prefix) and weight letters, ``!``, ``<->`` / ``<N>`` (phrase), ``&``, ``|`` and
parentheses, in that order of binding. An empty text is the empty query (only stop words), which matches
nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\s*(?:(')((?:[^'\\]|''|\\.)*)'(?::([*A-Da-d]+))?|(<->|<\d+>)|([!&|()]))")


@dataclass(frozen=True, slots=True)
class Lexeme:
    text: str
    prefix: bool
    weighted: bool = False  # ``:A``..``:D`` restricts by weight: not something our postings record


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Phrase:
    left: Node
    right: Node
    distance: int


Node = Lexeme | Not | And | Or | Phrase


class TsqueryError(ValueError):
    pass


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def to_text(node: Node) -> str:
    """Back to ``tsquery`` input syntax (fully parenthesised), for the statements that verify phrases."""
    match node:
        case Lexeme(text, prefix, _):
            return _quote(text) + (":*" if prefix else "")
        case Not(operand):
            return f"!({to_text(operand)})"
        case And(operands):
            return "(" + " & ".join(map(to_text, operands)) + ")"
        case Or(operands):
            return "(" + " | ".join(map(to_text, operands)) + ")"
        case Phrase(left, right, distance):
            return f"({to_text(left)} <{distance}> {to_text(right)})"


def parse(text: str) -> Node | None:
    """The tree of a printed ``tsquery``; ``None`` for the empty query."""
    tokens: list[tuple[str, str, str]] = []  # (kind, value, flags)
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        found = _TOKEN.match(text, at)
        if found is None:
            raise TsqueryError(f"unexpected tsquery text at {at}: {text[at : at + 20]!r}")
        quote, body, flags, phrase, operator = found.groups()
        if quote:
            value = re.sub(r"''|\\(.)", lambda m: m.group(1) or "'", body)
            tokens.append(("lexeme", value, flags or ""))
        elif phrase:
            tokens.append(("phrase", "1" if phrase == "<->" else phrase[1:-1], ""))
        else:
            tokens.append((operator, operator, ""))
        at = found.end()
    if not tokens:
        return None
    parser = _Parser(tokens)
    node = parser.expression(0)
    if parser.at != len(tokens):
        raise TsqueryError(f"unexpected {tokens[parser.at][1]!r} in tsquery")
    return node


_BINDING = {"|": 1, "&": 2, "phrase": 3}


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, str]]) -> None:
        self.tokens, self.at = tokens, 0

    def _next(self) -> tuple[str, str, str]:
        if self.at >= len(self.tokens):
            raise TsqueryError("tsquery ends early")
        token = self.tokens[self.at]
        self.at += 1
        return token

    def _operand(self) -> Node:
        kind, value, flags = self._next()
        if kind == "lexeme":
            return Lexeme(value, "*" in flags, weighted=flags.strip("*") != "")
        if kind == "!":
            return Not(self._operand())
        if kind == "(":
            node = self.expression(0)
            if self._next()[0] != ")":
                raise TsqueryError("unbalanced parentheses in tsquery")
            return node
        raise TsqueryError(f"unexpected {value!r} in tsquery")

    def expression(self, floor: int) -> Node:
        left = self._operand()
        while self.at < len(self.tokens):
            kind, value, _ = self.tokens[self.at]
            binding = _BINDING.get(kind)
            if binding is None or binding <= floor:
                break
            self.at += 1
            right = self.expression(binding)
            if kind == "phrase":
                left = Phrase(left, right, int(value))
            elif kind == "&":
                left = And((*left.operands, right) if isinstance(left, And) else (left, right))
            else:
                left = Or((*left.operands, right) if isinstance(left, Or) else (left, right))
        return left
