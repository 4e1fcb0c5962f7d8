"""The search language users type, parsed once and compiled for each backend.

Web-search syntax, as people already know it from search engines and PostgreSQL's
``websearch_to_tsquery``: words (each also matching as a prefix, and by stem: "deploy" finds
"deployment"), ``"quoted phrases"``, ``OR`` between alternatives, and ``-word`` / ``-"phrase"`` to
exclude. Anything else is punctuation and separates words. Parsing here, rather than passing the text to
the database, means one behaviour on both backends and no way to inject the backends' own operators.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import snowballstemmer

from threadline.kit.errors import BadRequest, Reason

_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
# Letters and digits: underscores and other punctuation separate words, as both backends' tokenizers do.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_CHARS = 512
MAX_WORDS = 32
_stemmer = snowballstemmer.stemmer("english")


@dataclass(frozen=True, slots=True)
class Phrase:
    """One word (matched as a prefix) or several in sequence (matched exactly, by stem)."""

    words: tuple[str, ...]

    @property
    def is_prefix(self) -> bool:
        return len(self.words) == 1


@dataclass(frozen=True, slots=True)
class Query:
    """All of ``groups`` must match (each group: any of its phrases); none of ``excluded`` may."""

    groups: tuple[tuple[Phrase, ...], ...]
    excluded: tuple[Phrase, ...]


def parse(text: str, *, literal: bool = False) -> Query:
    """``literal``: words are whatever lies between spaces, punctuation included (``ERR_TIMEOUT``,
    ``10.0.0.1``), for matching as text rather than through a word index."""
    if len(text) > MAX_QUERY_CHARS:
        raise BadRequest(f"q is longer than {MAX_QUERY_CHARS} characters.", reason=Reason.INVALID_QUERY)
    groups: list[list[Phrase]] = []
    excluded: list[Phrase] = []
    join_next = False
    for match in _TOKEN.finditer(text):
        negated, quoted, bare = match.group(1), match.group(2), match.group(3)
        if bare == "OR":
            join_next = bool(groups)
            continue
        if bare is not None and bare.startswith("-") and len(bare) > 1:
            negated, bare = "-", bare[1:]
        raw = (quoted if quoted is not None else bare or "").lower()
        words = raw.split() if literal else _WORD.findall(raw)
        if not words:
            continue
        # Quoted text, and a bare token with inner punctuation ("deploy-service"), is one phrase.
        phrase = Phrase(tuple(words))
        if negated:
            excluded.append(phrase)
        elif join_next:
            groups[-1].append(phrase)
        else:
            groups.append([phrase])
        join_next = False
    if not groups:
        raise BadRequest(
            "q has nothing to search for: give at least one word that is not excluded.",
            reason=Reason.INVALID_QUERY,
        )
    if sum(len(p.words) for g in groups for p in g) + sum(len(p.words) for p in excluded) > MAX_WORDS:
        raise BadRequest(f"q has more than {MAX_WORDS} words.", reason=Reason.INVALID_QUERY)
    return Query(groups=tuple(tuple(g) for g in groups), excluded=tuple(excluded))


def is_short(word: str) -> bool:
    """Three letters or fewer: matched as typed, not by stem (see ``stem``)."""
    return len(word) <= 3


def stem(word: str) -> str:
    """English stem (Snowball), the part of a word its inflections share: "deploying" -> "deploy".

    Words of three letters or fewer are left alone: typed as a prefix they are usually the start of a
    longer word ("ins" for "insurance"), and their stems ("ins" -> "in") would match half the corpus."""
    if is_short(word):
        return word
    stemmed: str = _stemmer.stemWord(word)
    return stemmed


def to_fts5(query: Query) -> str:
    """SQLite FTS5 over unstemmed words: a single word matches as a prefix of itself or of its stem (so
    "deploying" finds "deployment", and "staging" still finds "staging" though its stem is "stage"; when the
    stem begins the word, as "deploy" begins "deploying", the stem alone says the same);
    phrases match as written. Every word is quoted: FTS5 operators cannot leak in."""

    def phrase(p: Phrase) -> str:
        if not p.is_prefix:
            return '"' + " ".join(p.words) + '"'
        word, root = p.words[0], stem(p.words[0])
        # A stem that begins the word already matches all the word matches: one prefix walk, not two.
        return f'"{root}"*' if word.startswith(root) else f'("{word}"* OR "{root}"*)'

    def group(g: tuple[Phrase, ...]) -> str:
        return phrase(g[0]) if len(g) == 1 else "(" + " OR ".join(phrase(p) for p in g) + ")"

    expression = " AND ".join(group(g) for g in query.groups)
    if query.excluded:
        expression = f"({expression}) NOT (" + " OR ".join(phrase(p) for p in query.excluded) + ")"
    return expression


def tsquery_phrase(phrase: Phrase) -> str:
    """One phrase as PostgreSQL ``to_tsquery`` text: words are letters and digits only (no operator can leak
    in), a single word gets ``:*``. ``search/postgres.py`` combines the phrases, and matches short words
    (``is_short``) as typed as well."""
    return f"{phrase.words[0]}:*" if phrase.is_prefix else "(" + " <-> ".join(phrase.words) + ")"
