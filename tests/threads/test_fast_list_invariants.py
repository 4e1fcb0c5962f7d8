"""What ``threads.fast_list`` takes from FastAPI when it is imported, held here rather than as import-time
``assert`` statements (which ``python -O`` drops): the page parameters are fields it may validate itself, and
the FastAPI internals it reads (``Dependant``'s query parameters, ``ModelField.validate``, the rule in
``fastapi._compat`` that tells a sequence parameter) are those of the version the lockfile pins. A FastAPI
upgrade fails the last test until someone has checked the fast path against the new version."""

from __future__ import annotations

import re
from pathlib import Path

import fastapi
from fastapi._compat import field_annotation_is_sequence
from fastapi.routing import APIRoute

from threadline.kit.pagination import cursor_params
from threadline.threads import fast_list

LOCKED = Path(__file__).resolve().parents[2] / "requirements.lock"


def test_the_declared_list_is_a_route_with_methods() -> None:
    assert isinstance(fast_list._ROUTE, APIRoute)
    assert fast_list._ROUTE.methods == {"GET"}
    assert {"/v1/threads": frozenset({"GET", "HEAD"})} == fast_list.LIST_ROUTE


def test_the_page_parameters_are_single_valued_optional_fields_with_plain_defaults() -> None:
    declared = next(d for d in fast_list._ROUTE.dependant.dependencies if d.call is cursor_params)
    fields = declared.query_params
    assert sorted(field.alias for field in fields) == ["cursor", "limit"]
    for field in fields:
        assert not field.field_info.is_required()
        assert not field.field_info.validate_default
        assert isinstance(field.default, int | str | None)
        assert not field_annotation_is_sequence(field.field_info.annotation)
    assert [(name, alias) for name, alias, _, _ in fast_list._PAGE_FIELDS] == [
        (field.name, field.alias) for field in fields
    ]


def test_fastapi_is_the_version_the_fast_path_was_checked_against() -> None:
    pinned = re.search(r"^fastapi==(\S+)$", LOCKED.read_text(), re.MULTILINE)
    assert pinned is not None
    assert fastapi.__version__ == pinned.group(1) == "0.165.0"
