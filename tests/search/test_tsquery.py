"""Reading PostgreSQL's printed ``tsquery`` back: the tree must mean what PostgreSQL meant."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline.runtime import Services
from threadline.search import tsquery
from threadline.search.postgres import compiled_tsquery
from threadline.search.query import parse as parse_query
from threadline.search.tsquery import And, Lexeme, Not, Or, Phrase


def test_operators_bind_as_in_postgresql() -> None:
    """``|`` < ``&`` < ``<N>`` < ``!``, left to right."""
    assert tsquery.parse("'a' | 'b' & !'c' <-> 'd':*") == Or(
        (
            Lexeme("a", prefix=False),
            And(
                (
                    Lexeme("b", prefix=False),
                    Phrase(Not(Lexeme("c", prefix=False)), Lexeme("d", prefix=True), 1),
                )
            ),
        )
    )
    assert tsquery.parse("'a' <-> 'b' <3> 'c'") == Phrase(
        Phrase(Lexeme("a", False), Lexeme("b", False), 1), Lexeme("c", False), 3
    )
    assert tsquery.parse("( 'a' | 'b' ) & 'c'") == And(
        (Or((Lexeme("a", False), Lexeme("b", False))), Lexeme("c", False))
    )


def test_quotes_weights_and_the_empty_query() -> None:
    assert tsquery.parse("'it''s' & 'back\\\\slash'") == And(
        (Lexeme("it's", False), Lexeme("back\\slash", False))
    )
    assert tsquery.parse("'x':*AB") == Lexeme("x", prefix=True, weighted=True)
    assert tsquery.parse("'x':C") == Lexeme("x", prefix=False, weighted=True)
    assert tsquery.parse("") is None
    assert tsquery.parse("   ") is None


@pytest.mark.parametrize("text", ["'a' &", "( 'a'", "'a' 'b'", "& 'a'", "'a' ) ", "'a' # 'b'"])
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(tsquery.TsqueryError):
        tsquery.parse(text)


_WORDS = ["deploy", "deployments", "server's", "it", "the", "ins", "timeout", "x1", "naïve", "back\\slash"]
_TERMS = st.sampled_from(_WORDS).map(lambda w: f'"{w} {w[::-1]}"' if len(w) > 6 else w)
_QUERIES = st.lists(st.tuples(st.sampled_from(["", "-", "OR "]), _TERMS), min_size=1, max_size=5).map(
    lambda terms: " ".join(f"{op}{term}" for op, term in terms)
)


@pytest.mark.distributed
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_QUERIES)
async def test_round_trip_through_postgresql(services: Services, text: str) -> None:
    """Any query we compile, printed by PostgreSQL, read by us and written back, is the same tsquery."""
    try:
        query = parse_query(text)
    except Exception:  # nothing left to search for: not a query
        return
    async with services.db.transaction(write=False) as conn:
        printed = await compiled_tsquery(conn, query)
        tree = tsquery.parse(printed)
        if tree is None:
            assert printed.strip() == ""
            return
        reprint = sa.text("SELECT CAST(CAST(:text AS tsquery) AS text)")
        reprinted = (await conn.execute(reprint, {"text": tsquery.to_text(tree)})).scalar_one()
    assert reprinted == printed
