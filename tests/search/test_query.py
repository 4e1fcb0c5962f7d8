"""The search language: what users type becomes a safe query for either backend."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline.kit.errors import BadRequest
from threadline.search.query import Phrase, parse, to_fts5, tsquery_phrase


@pytest.mark.parametrize(
    ("text", "fts5", "tsquery"),
    [
        ("deploy", '"deploy"*', ["deploy:*"]),
        ("Deploy FAILED", '"deploy"* AND "fail"*', ["deploy:*", "failed:*"]),
        ("deploying", '"deploy"*', ["deploying:*"]),
        ("staging", '("staging"* OR "stage"*)', ["staging:*"]),
        ("ins", '"ins"*', ["ins:*"]),
        (
            '"deploy failed" OR rollback',
            '("deploy failed" OR "rollback"*)',
            ["(deploy <-> failed)", "rollback:*"],
        ),
        ("deploy -staging", '("deploy"*) NOT (("staging"* OR "stage"*))', ["deploy:*", "staging:*"]),
        ("deploy-service", '"deploy service"', ["(deploy <-> service)"]),
        ("a OR b c", '("a"* OR "b"*) AND "c"*', ["a:*", "b:*", "c:*"]),
        ("OR x OR", '"x"*', ["x:*"]),
        ('x" AND y)*:', '"x"* AND "and"* AND "y"*', ["x:*", "and:*", "y:*"]),
    ],
)
def test_compiles(text: str, fts5: str, tsquery: list[str]) -> None:
    """PostgreSQL's phrases; ``search/postgres.py`` combines them (tested through the endpoints)."""
    query = parse(text)
    assert to_fts5(query) == fts5
    phrases = [p for group in query.groups for p in group] + list(query.excluded)
    assert [tsquery_phrase(p) for p in phrases] == tsquery


@pytest.mark.parametrize("text", ["", "   ", "-x", '-"a b"', "!!! ???", "x" * 513, " ".join(["w"] * 33)])
def test_refuses_what_cannot_be_searched(text: str) -> None:
    with pytest.raises(BadRequest) as raised:
        parse(text)
    assert raised.value.reason == "INVALID_QUERY"


@given(st.text(min_size=1, max_size=200))
def test_no_input_leaks_backend_syntax(text: str) -> None:
    try:
        query = parse(text)
    except BadRequest:
        return
    for group in query.groups:
        for phrase in group:
            assert isinstance(phrase, Phrase)
            assert all(word.isalnum() for word in phrase.words)
    assert to_fts5(query).count('"') % 2 == 0
