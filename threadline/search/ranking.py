"""Relevance and snippets, computed here for the few rows that need them, the same way on both backends.

The databases find and count matches (that needs their indexes); scoring and highlighting a page's
candidates needs only their text. Doing it here costs well under a millisecond for a few hundred short
texts, whereas FTS5's ``bm25`` first walks the whole doclist of every phrase of the query (the tenant
filter's included: a million entries) to weigh the phrases, and ``ts_rank_cd`` / ``ts_headline`` detoast
and re-parse every row they see. See ``backend.py`` for which rows are scored.

The score is BM25's term-frequency part with every phrase weighted alike (no inverse document frequency,
which would need those doclist walks): occurrences of the query's phrases, saturating, damped for texts
longer than the candidates' average. Words match as the index matches them, closely enough to rank and
mark: a word as a prefix of a token or of the token's stem, a phrase as its words in sequence."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from threadline.search.query import Phrase, Query, stem

MARK_START, MARK_END, ELLIPSIS = "<mark>", "</mark>", "…"
_WORD = re.compile(r"[^\W_]+")
_K1, _B = 1.2, 0.75  # BM25's usual constants
SNIPPET_WORDS = 24
_LEAD_WORDS = 6  # words shown before the first match, when the text is longer than a snippet


def _phrase_pattern(phrase: Phrase, start: str) -> str:
    def word(w: str) -> str:
        alternatives = sorted({re.escape(w), re.escape(stem(w))}, key=len, reverse=True)
        return "(?:" + "|".join(alternatives) + r")[^\W_]*"

    return start + r"[\W_]+".join(word(w) for w in phrase.words)


class Matcher:
    """The query's wanted phrases (not its exclusions) as one pattern over stored text."""

    def __init__(self, query: Query) -> None:
        phrases = [p for group in query.groups for p in group]
        # Where a word starts: exactly, for marking; ``\b`` (an underscore joins words) for scoring lowered
        # text, six times faster and only different for "snake_case" words.
        self._pattern = re.compile(
            "|".join(_phrase_pattern(p, r"(?<![^\W_])") for p in phrases), re.IGNORECASE
        )
        self._scoring = re.compile("|".join(_phrase_pattern(p, r"\b") for p in phrases))

    def scores(self, texts: Sequence[str]) -> list[float]:
        """One score per text, higher is more relevant; deterministic for the same texts."""
        counted = [(len(self._scoring.findall(t.lower())), len(t.split())) for t in texts]
        average = max(1.0, sum(length for _, length in counted) / max(1, len(counted)))
        return [
            tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average)) if tf else 0.0
            for tf, length in counted
        ]

    def snippet(self, text: str) -> str:
        """Up to ``SNIPPET_WORDS`` words around the first match, matches between the marks, an ellipsis
        where text was cut; the rest is the text as stored."""
        matches = [m.span() for m in self._pattern.finditer(text)]
        words = [m.span() for m in _WORD.finditer(text)]
        if not words:
            return text
        first = bisect_right([end for _, end in words], matches[0][0]) if matches else 0
        start = max(0, min(first - _LEAD_WORDS, len(words) - SNIPPET_WORDS))
        stop = min(len(words), start + SNIPPET_WORDS)
        low = 0 if start == 0 else words[start][0]
        high = len(text) if stop == len(words) else words[stop - 1][1]
        parts = [ELLIPSIS] if start > 0 else []
        at = low
        for begin, end in matches:
            if begin < low or begin >= high:
                continue
            parts += [text[at:begin], MARK_START, text[begin:end], MARK_END]
            at = end
        parts.append(text[at : max(at, high)])
        if stop < len(words):
            parts.append(ELLIPSIS)
        return "".join(parts)
