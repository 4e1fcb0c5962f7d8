"""A ``tsquery`` evaluated over sets of message ``seq``: sorted, duplicate-free numpy arrays.

Why arrays in Python rather than SQL: PostgreSQL can count the matches of a query only by visiting each
matching row (bench/HISTORY.md), and the count is what a search page must return. Our postings
(``search/postings.py``) hold, for each lexeme, the ``seq`` of every message that contains it; combining a
few of those lists with numpy (sorted merges at memory speed) costs a few milliseconds for hundreds of
thousands of matches, and the count is then the length of the result.

Postings also keep each word's positions in each message (the tsvector's own), so a phrase of words,
the kind our queries make (``'connect' <-> 'timeout'``, ``'error' <2> 'log'`` across a stop word), is
matched here, exactly as PostgreSQL matches it, with no row read: reading ~8,000 rows to check a common
two-word phrase took 40-45 ms even with every page cached. Anything else that needs PostgreSQL's own
evaluation (a word's weight, a negation inside a phrase) is narrowed by the postings, then PostgreSQL
checks those rows (``Verify``). Only a query whose matches no posting bounds (a bare negation:
``the -alpha``, where ``the`` is a stop word) is left to the GIN index."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import reduce

import numpy as np
import numpy.typing as npt

from threadline.search.tsquery import And, Lexeme, Node, Not, Or, Phrase

# A message's role as a lexeme, ``' role:user'``: a space is never part of a stored lexeme (PostgreSQL's
# parser splits words on it), so the key meets no lexeme, and no prefix a user types ranges over it.
ROLE_MARK = " role:"

Seqs = npt.NDArray[np.int64]
# Where a word occurs: ``seq << 16 | position`` (positions are below 2**14), sorted.
Occurrences = npt.NDArray[np.int64]
Lookup = Callable[[Lexeme], Seqs]
Locate = Callable[[Lexeme], Occurrences]
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
    if len(parts) == 1:
        return np.frombuffer(parts[0], dtype=">i8").astype(np.int64)
    return union([np.frombuffer(part, dtype=">i8").astype(np.int64) for part in parts])


def union(arrays: Iterable[Seqs]) -> Seqs:
    present = [a for a in arrays if len(a)]
    if not present:
        return empty()
    if len(present) == 1:
        return present[0]
    # Timsort ("stable" for int64) merges the sorted runs it finds: a few lists cost a merge, not a sort.
    merged = np.sort(np.concatenate(present), kind="stable")
    keep = np.empty(len(merged), dtype=np.bool_)
    keep[0] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    return merged[keep]


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


def occurrences(seqs: Seqs, counts: bytes, positions: bytes) -> Occurrences:
    """``counts[i]`` positions (``int2``) of the word belong to ``seqs[i]``."""
    per_seq = np.frombuffer(counts, dtype=">i2").astype(np.int64)
    at = np.frombuffer(positions, dtype=">i2").astype(np.int64)
    found: Occurrences = (np.repeat(seqs, per_seq) << 16) | at
    return found


def _plain(node: Node) -> bool:
    return isinstance(node, Lexeme) and not node.prefix and not node.weighted


def is_positional(node: Node) -> bool:
    """A phrase of plain words, left to right (how PostgreSQL prints the phrases our queries compile to):
    matched from the stored positions."""
    return isinstance(node, Phrase) and _plain(node.right) and (_plain(node.left) or is_positional(node.left))


def positional_lexemes(node: Node) -> list[Lexeme]:
    """The words whose positions the query needs."""
    if is_positional(node):
        return lexemes(node)
    match node:
        case Not(operand):
            return positional_lexemes(operand)
        case And(operands) | Or(operands):
            return [lexeme for operand in operands for lexeme in positional_lexemes(operand)]
    return []


def _phrase_ends(node: Node, locate: Locate) -> Occurrences:
    """Where a positional phrase ends: PostgreSQL places a phrase at its last word, and ``l <d> r``
    matches where ``r`` stands ``d`` positions after the end of ``l``."""
    if isinstance(node, Lexeme):
        return locate(node)
    assert isinstance(node, Phrase)
    assert isinstance(node.right, Lexeme)
    left, right = _phrase_ends(node.left, locate), locate(node.right)
    return right[_found(left, right - node.distance)]


def _seqs_of(found: Occurrences) -> Seqs:
    seqs = found >> 16
    if not len(seqs):
        return seqs
    keep = np.empty(len(seqs), dtype=np.bool_)
    keep[0] = True
    np.not_equal(seqs[1:], seqs[:-1], out=keep[1:])
    return seqs[keep]


def is_exact(node: Node) -> bool:
    """Whether ``evaluate`` answers ``node`` from postings alone, without asking PostgreSQL to verify."""
    match node:
        case Lexeme(_, _, weighted):
            return not weighted
        case Phrase():
            return is_positional(node)
        case Or(operands):
            return all(map(is_exact, operands))
        case And(operands):
            positive = [o for o in operands if not isinstance(o, Not)]
            return bool(positive) and all(map(is_exact, positive))
        case Not():
            return False


def is_bounded(node: Node) -> bool:
    """Whether the matches of ``node`` lie within some postings (then ``evaluate`` can answer it, by
    verifying candidates if it must); a bare negation matches almost everything: the GIN index's case."""
    match node:
        case Lexeme():
            return True
        case Phrase(left, right, _):
            return is_bounded(left) or is_bounded(right)
        case Or(operands):
            return all(map(is_bounded, operands))
        case And(operands):
            return any(is_bounded(o) for o in operands if not isinstance(o, Not))
        case Not():
            return False


def lexemes(node: Node) -> list[Lexeme]:
    """Every posting list the query may read: its words, those of its phrases included."""
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
    """Seqs that include every match of ``node`` (``None``: any message may match): a phrase's words all
    occur where the phrase does, whatever their positions."""
    match node:
        case Lexeme():
            return lookup(Lexeme(node.text, node.prefix))
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


async def evaluate(node: Node, lookup: Lookup, locate: Locate, verify: Verify) -> Seqs:
    """The seqs matching ``node``; ``is_bounded(node)`` must hold. What postings cannot decide (a word's
    weight, a phrase of anything but words) is narrowed by them, then verified by PostgreSQL."""
    if is_positional(node):
        return _seqs_of(_phrase_ends(node, locate))
    match node:
        case Lexeme(_, _, False):
            return lookup(node)
        case Or(operands):
            return union([await evaluate(o, lookup, locate, verify) for o in operands])
        case And(operands):
            positive = [o for o in operands if not isinstance(o, Not)]
            found = [await evaluate(o, lookup, locate, verify) for o in positive if is_bounded(o)]
            result = reduce(intersect, sorted(found, key=len))
            for operand in operands:
                if not len(result):
                    break
                if not isinstance(operand, Not):
                    if not is_bounded(operand):
                        result = await verify(result, operand)
                    continue
                excluded = operand.operand
                if is_exact(excluded):
                    result = subtract(result, await evaluate(excluded, lookup, locate, verify))
                    continue
                narrowed = _superset(excluded, lookup)
                candidates = result if narrowed is None else intersect(result, narrowed)
                if len(candidates):
                    result = subtract(result, await verify(candidates, excluded))
            return result
        case Not():
            raise ValueError(f"a bare negation is not answerable from postings: {node!r}")
    bound = _superset(node, lookup)
    if bound is None:
        raise ValueError(f"not answerable from postings: {node!r}")
    return await verify(bound, node) if len(bound) else bound
