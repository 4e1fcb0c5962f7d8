"""A ``tsquery`` evaluated over sets of message ``seq``: sorted, duplicate-free numpy arrays.

Why arrays in Python rather than SQL: PostgreSQL can count the matches of a query only by visiting each
matching row (bench/README), and the count is what a search page must return. Our postings
(``search/postings.py``) hold, for each lexeme, the ``seq`` of every message that contains it; combining a
few of those lists with numpy (sorted merges at memory speed) costs a few milliseconds for hundreds of
thousands of matches, and the count is then the length of the result.

What cannot be answered from postings alone is left to PostgreSQL: a phrase needs word positions, which
postings do not keep. A *positive* phrase (or a weighted operand, or a negation that is not beside a
positive operand) makes the whole query ``unsupported`` and the caller asks the GIN index instead; a phrase
under ``!`` is answered here by narrowing the candidates with the phrase's words, then asking PostgreSQL
which of those few rows hold the phrase (``Verify``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import reduce

import numpy as np
import numpy.typing as npt

from threadline.search.tsquery import And, Lexeme, Node, Not, Or, Phrase

Seqs = npt.NDArray[np.int64]
Lookup = Callable[[Lexeme], Seqs]
Verify = Callable[[Seqs, Node], Awaitable[Seqs]]  # which of these seqs match this (sub)query


def empty() -> Seqs:
    return np.empty(0, dtype=np.int64)


def of(values: Iterable[int]) -> Seqs:
    return np.unique(np.fromiter(values, dtype=np.int64))


def decode(parts: Sequence[bytes]) -> Seqs:
    """Postings are big-endian ``int8`` (``int8send``), each part sorted; parts may overlap (a prefix
    spans several lexemes, and one message holds several of them)."""
    if not parts:
        return empty()
    seqs = np.frombuffer(b"".join(parts), dtype=">i8").astype(np.int64)
    return seqs if len(parts) == 1 else np.unique(seqs)


def union(arrays: Iterable[Seqs]) -> Seqs:
    present = [a for a in arrays if len(a)]
    if not present:
        return empty()
    return present[0] if len(present) == 1 else np.unique(np.concatenate(present))


def _found(haystack: Seqs, needles: Seqs) -> npt.NDArray[np.bool_]:
    """For each needle, whether the sorted ``haystack`` holds it: a binary search per needle, so the
    cost follows the smaller side (a rare word against a common one)."""
    if not len(haystack):
        return np.zeros(len(needles), dtype=np.bool_)
    at = np.searchsorted(haystack, needles).clip(max=len(haystack) - 1)
    found: npt.NDArray[np.bool_] = haystack[at] == needles
    return found


def intersect(a: Seqs, b: Seqs) -> Seqs:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return small[_found(large, small)]


def subtract(a: Seqs, b: Seqs) -> Seqs:
    if not len(a) or not len(b):
        return a
    return a[~_found(b, a)]


def is_exact(node: Node) -> bool:
    """Whether ``evaluate`` answers ``node`` from postings alone (otherwise the caller uses GIN)."""
    match node:
        case Lexeme(_, _, weighted):
            return not weighted
        case Or(operands):
            return all(map(is_exact, operands))
        case And(operands):
            positive = [o for o in operands if not isinstance(o, Not)]
            # A negated operand never needs to be exact: it is verified against its candidates.
            return bool(positive) and all(map(is_exact, positive))
        case Not() | Phrase():
            return False


def lexemes(node: Node) -> list[Lexeme]:
    """Every operand of the query, in order: what to fetch from the postings."""
    match node:
        case Lexeme():
            return [node]
        case Not(operand):
            return lexemes(operand)
        case And(operands) | Or(operands):
            return [lexeme for operand in operands for lexeme in lexemes(operand)]
        case Phrase(left, right, _):
            return lexemes(left) + lexemes(right)


def _superset(node: Node, lookup: Lookup) -> Seqs | None:
    """Seqs that include every match of ``node`` (``None``: any message may match): a phrase's words
    all occur where the phrase does, whatever their positions."""
    match node:
        case Lexeme():
            return lookup(node)
        case Or(operands):
            parts = [_superset(o, lookup) for o in operands]
            return None if any(p is None for p in parts) else union(p for p in parts if p is not None)
        case And(operands):
            return _intersection([_superset(o, lookup) for o in operands])
        case Phrase(left, right, _):
            return _intersection([_superset(left, lookup), _superset(right, lookup)])
        case Not():
            return None


def _intersection(parts: Sequence[Seqs | None]) -> Seqs | None:
    known = sorted((p for p in parts if p is not None), key=len)
    return reduce(intersect, known) if known else None


async def evaluate(node: Node, lookup: Lookup, verify: Verify) -> Seqs:
    """The seqs matching ``node``; ``is_exact(node)`` must hold."""
    match node:
        case Lexeme():
            return lookup(node)
        case Or(operands):
            return union([await evaluate(o, lookup, verify) for o in operands])
        case And(operands):
            positive = [await evaluate(o, lookup, verify) for o in operands if not isinstance(o, Not)]
            result = reduce(intersect, sorted(positive, key=len))
            for operand in operands:
                if not isinstance(operand, Not) or not len(result):
                    continue
                excluded = operand.operand
                if is_exact(excluded):
                    result = subtract(result, await evaluate(excluded, lookup, verify))
                    continue
                narrowed = _superset(excluded, lookup)
                candidates = result if narrowed is None else intersect(result, narrowed)
                if len(candidates):
                    result = subtract(result, await verify(candidates, excluded))
            return result
        case Not() | Phrase():
            raise ValueError(f"not answerable from postings: {node!r}")
