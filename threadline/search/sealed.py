"""PostgreSQL: the matches of a message search read from the sealed postings (``search/postings.py``)
and, above the watermark, from the GIN index; every statement scoped to the organization.

Three statements: the postings of the query's lexemes with the organization's tombstones and the
watermark (one statement, one snapshot: a merge or a seal in between cannot be seen half done), the
messages above that watermark that match (by primary key from the watermark up: the planner gets the
watermark as a constant, so it knows the range is small), and, for a phrase under ``-``, which candidates
hold the phrase. A message deleted between the first and the second statement may still be counted by
that one search, as it would be by a search that ran a moment earlier; its row is not returned."""

from __future__ import annotations

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.search import sets, tsquery
from threadline.search.sets import ROLE_MARK, Occurrences, Seqs
from threadline.search.tsquery import Lexeme, Node

_TAIL = (
    "SELECT seq FROM messages WHERE organization_id = :organization_id AND seq > {sealed} "
    "AND search_vector @@ CAST(:query AS tsquery)"
)
_VERIFY = sa.text(
    "SELECT seq FROM messages WHERE organization_id = :organization_id "
    "AND seq = ANY(CAST(:candidates AS bigint[])) AND search_vector @@ CAST(:query AS tsquery)"
)


def _after_prefix(prefix: str) -> str | None:
    """The least text greater than every text starting with ``prefix`` (byte order, ``COLLATE "C"``)."""
    for at in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[at]) + 1
        if 0xD800 <= code <= 0xDFFF:  # surrogates are not characters: the next one is U+E000
            code = 0xE000
        if code <= 0x10FFFF:
            return prefix[:at] + chr(code)
    return None


def _postings_statement(
    operands: list[Lexeme], positional: list[Lexeme]
) -> tuple[sa.TextClause, dict[str, object]]:
    exact = sorted({o.text for o in operands if not o.prefix})
    values: dict[str, object] = {"exact": exact, "positional": sorted({o.text for o in positional})}
    ranges = []
    for i, prefix in enumerate(sorted({o.text for o in operands if o.prefix})):
        values[f"from_{i}"] = prefix
        bound = _after_prefix(prefix)
        if bound is None:
            ranges.append(f"lexeme >= :from_{i}")
        else:
            values[f"to_{i}"] = bound
            ranges.append(f"(lexeme >= :from_{i} AND lexeme < :to_{i})")
    wanted = " OR ".join(["lexeme = ANY(CAST(:exact AS text[]))", *ranges])
    # Only bind parameter names are formatted in.
    statement = sa.text(
        "SELECT 0 AS kind, lexeme, seqs, "  # noqa: S608
        "CASE WHEN lexeme = ANY(CAST(:positional AS text[])) THEN counts END AS counts, "
        "CASE WHEN lexeme = ANY(CAST(:positional AS text[])) THEN positions END AS positions "
        f"FROM search_postings WHERE organization_id = :organization_id AND ({wanted}) "
        "UNION ALL SELECT 1, NULL, string_agg(int8send(seq), ''::bytea ORDER BY seq), NULL, NULL "
        "FROM search_tombstones WHERE organization_id = :organization_id "
        "UNION ALL SELECT 2, NULL, int8send(sealed_seq), NULL, NULL FROM search_watermark WHERE id = 1"
    )
    return statement, values


class _Postings:
    """The fetched postings, by lexeme; each operand's seqs (and positions) decoded once."""

    def __init__(self) -> None:
        self._by_lexeme: dict[str, list[bytes]] = {}
        self._positions: dict[str, list[tuple[bytes, bytes, bytes]]] = {}
        self._decoded: dict[Lexeme, Seqs] = {}
        self._located: dict[str, Occurrences] = {}

    def add(self, lexeme: str, seqs: bytes, counts: bytes | None, positions: bytes | None) -> None:
        self._by_lexeme.setdefault(lexeme, []).append(seqs)
        if counts is not None and positions is not None:
            self._positions.setdefault(lexeme, []).append((seqs, counts, positions))

    def locate(self, operand: Lexeme) -> Occurrences:
        if operand.text not in self._located:
            parts = [
                sets.occurrences(sets.decode([seqs]), counts, positions)
                for seqs, counts, positions in self._positions.get(operand.text, [])
            ]
            self._located[operand.text] = sets.union(parts)
        return self._located[operand.text]

    def __call__(self, operand: Lexeme) -> Seqs:
        key = Lexeme(operand.text, operand.prefix)
        if key not in self._decoded:
            if key.prefix:
                found = (ps for lexeme, ps in self._by_lexeme.items() if lexeme.startswith(key.text))
                parts = [part for ps in found for part in ps]
            else:
                parts = self._by_lexeme.get(key.text, [])
            self._decoded[key] = sets.decode(parts)
        return self._decoded[key]


async def matches(conn: Conn, organization_id: str, compiled: str, role: str | None) -> Seqs | None:
    """Every match of the ``tsquery`` text ``compiled``, oldest first; ``None`` when the postings cannot
    bound it (``sets.is_bounded``) and the caller must ask the GIN index."""
    try:
        tree = tsquery.parse(compiled)
    except tsquery.TsqueryError:
        return None
    if tree is None:
        return sets.empty()  # only stop words: PostgreSQL matches nothing either
    if not sets.is_bounded(tree):
        return None
    operands = sets.lexemes(tree)
    role_operand = None if role is None else Lexeme(ROLE_MARK + role, prefix=False)
    fetched = operands if role_operand is None else [*operands, role_operand]
    statement, values = _postings_statement(fetched, sets.positional_lexemes(tree))
    values["organization_id"] = organization_id
    lookup = _Postings()
    tombstones, sealed = sets.empty(), 0
    for row in (await conn.execute(statement, values)).all():
        kind, seqs = row.kind, row.seqs
        if kind == 0:
            lookup.add(row.lexeme, seqs, row.counts, row.positions)  # bytes, as asyncpg reads bytea
        elif kind == 1 and seqs is not None:
            tombstones = sets.decode([seqs])
        elif kind == 2:
            sealed = int(sets.decode([seqs])[0])

    async def verify(candidates: Seqs, node: Node) -> Seqs:
        query = {"organization_id": organization_id, "candidates": candidates.tolist()}
        rows = await conn.execute(_VERIFY, {**query, "query": tsquery.to_text(node)})
        return sets.of(rows.scalars().all())

    found = await sets.evaluate(tree, lookup, lookup.locate, verify)
    if role_operand is not None:
        found = sets.intersect(found, lookup(role_operand))
    found = sets.subtract(found, tombstones)
    tail = _TAIL.format(sealed=sealed)
    values = {"organization_id": organization_id, "query": compiled}
    if role is not None:
        tail, values["role"] = tail + " AND role = :role", role
    return sets.union([found, sets.of((await conn.execute(sa.text(tail), values)).scalars().all())])
