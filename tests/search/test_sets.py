"""The set algebra under PostgreSQL's postings, against Python's own sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from threadline.search import sets
from threadline.search.tsquery import And, Lexeme, Not, Or, Phrase, parse

_SEQS = st.lists(st.integers(1, 2**40), max_size=60)


def _arr(values: list[int]) -> sets.Seqs:
    return sets.of(values)


@given(_SEQS, _SEQS, _SEQS)
def test_union_intersect_subtract_are_the_set_operations(a: list[int], b: list[int], c: list[int]) -> None:
    assert sets.union([_arr(a), _arr(b), _arr(c)]).tolist() == sorted(set(a) | set(b) | set(c))
    assert sets.intersect(_arr(a), _arr(b)).tolist() == sorted(set(a) & set(b))
    assert sets.subtract(_arr(a), _arr(b)).tolist() == sorted(set(a) - set(b))


@given(st.lists(_SEQS, max_size=5))
def test_decode_reads_postings_as_written(parts: list[list[int]]) -> None:
    """Each part as ``string_agg(int8send(seq) ORDER BY seq)`` writes it; parts of a prefix overlap."""
    encoded = [b"".join(v.to_bytes(8, "big") for v in sorted(set(p))) for p in parts if p]
    assert sets.decode(encoded).tolist() == sorted({v for p in parts for v in p})


def test_occurrences_pair_each_position_with_its_message() -> None:
    seqs = np.array([7, 9], dtype=np.int64)
    counts = (2).to_bytes(2, "big") + (1).to_bytes(2, "big")
    positions = b"".join(p.to_bytes(2, "big") for p in (3, 16383, 1))
    found = sets.occurrences(seqs, counts, positions)
    assert [(int(k) >> 16, int(k) & 0xFFFF) for k in found] == [(7, 3), (7, 16383), (9, 1)]


def test_which_queries_postings_answer() -> None:
    word, other = Lexeme("error", prefix=False), Lexeme("rate", prefix=False)
    assert sets.is_exact(Phrase(word, other, 1))
    assert sets.is_exact(Phrase(Phrase(word, other, 2), word, 1))
    assert not sets.is_exact(Phrase(word, Lexeme("rat", prefix=True), 1))  # verified by PostgreSQL
    assert sets.is_bounded(Phrase(word, Lexeme("rat", prefix=True), 1))
    assert not sets.is_bounded(Not(word))  # nearly everything matches: the GIN index's case
    assert not sets.is_bounded(Or((word, Not(other))))
    assert sets.is_bounded(And((word, Not(Phrase(word, other, 1)))))
    tree = parse("'a' & !( 'b' <-> 'c' ) | 'd' <2> 'e'")
    assert tree is not None
    assert [lexeme.text for lexeme in sets.positional_lexemes(tree)] == ["b", "c", "d", "e"]
