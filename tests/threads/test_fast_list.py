"""``threads.fast_list`` against the declarations it stands in for: whatever it keeps beside FastAPI and
Pydantic (the page parameters, the body, the route, the error bodies) must come out as theirs would."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI
from fastapi.dependencies.utils import request_params_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from starlette.requests import Request

from tests.support import Tenant
from threadline.kit.errors import BadRequest
from threadline.kit.pagination import CursorPage, CursorParams, cursor_params, encode_cursor
from threadline.threads.fast_list import (
    _PAGE_QUERY,
    _STORED_COLUMNS,
    LIST_ROUTE,
    StoredThread,
    cursor_params_of,
    page_json,
)
from threadline.threads.schemas import ThreadOut
from threadline.threads.tables import threads


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=",
        "limit=1&limit=200",
        "limit=0&cursor=" + "a" * 201,
        "cursor=" + "a" * 201,
        "cursor=nope",
    ],
)
async def test_hand_read_page_parameters_fail_as_the_dependency_does(
    client: httpx.AsyncClient, tenant: Tenant, query: str
) -> None:
    """``GET /v1/threads`` reads its page parameters with ``cursor_params_of``; every other list with the
    ``cursor_params`` dependency. A client must not tell them apart."""
    headers = {**tenant.secret, "X-Request-Id": "req_samesame"}
    hand = await client.get(f"/v1/threads?{query}", headers=headers)
    dependency = await client.get(f"/v1/projects?{query}", headers=headers)
    assert hand.status_code == dependency.status_code == 400
    assert {**hand.json(), "operationId": None} == {**dependency.json(), "operationId": None}


@pytest.mark.parametrize("query", ["", "limit=1", "limit=100", "limit=1&limit=2"])
async def test_hand_read_page_parameters_page_as_the_dependency_does(
    client: httpx.AsyncClient, tenant: Tenant, query: str
) -> None:
    """Valid parameters: the same page size and a cursor the other reads back (one project, one thread
    besides, so ``limit=1`` has a next page on both)."""
    await client.post("/v1/projects", headers=tenant.secret, json={"name": "second"})
    for _ in range(2):
        await client.post("/v1/threads", headers=tenant.secret, json={})
    hand = (await client.get(f"/v1/threads?{query}", headers=tenant.secret)).json()
    dependency = (await client.get(f"/v1/projects?{query}", headers=tenant.secret)).json()
    assert len(hand["data"]) == len(dependency["data"])
    assert (hand["nextCursor"] is None) == (dependency["nextCursor"] is None)


PAGE_QUERIES = [
    "",
    "limit=1",
    "limit=100",
    "limit=1&limit=2",
    "limit=0",
    "limit=101",
    "limit=abc",
    "limit=",
    "limit=1.5",
    "limit=0&cursor=" + "a" * 201,
    "cursor=" + "a" * 201,
    "cursor=",
    "cursor=nope",
    "cursor=" + encode_cursor("thr_01m7yg84h7zr41avmzaw6ksd99"),
    "limit=7&cursor=" + encode_cursor("thr_01m7yg84h7zr41avmzaw6ksd99") + "&other=1",
]


async def _outcome(read: Awaitable[CursorParams]) -> CursorParams | tuple[str, object]:
    try:
        return await read
    except RequestValidationError as exc:
        return ("invalid", exc.errors())
    except BadRequest as error:
        return ("bad", (error.message, error.reason))


@pytest.mark.parametrize("query", PAGE_QUERIES)
async def test_page_parameters_read_as_fastapi_reads_them(query: str) -> None:
    """``cursor_params_of`` against FastAPI's own reading of the same declared fields, value for value
    and error for error."""
    request = Request(
        {"type": "http", "method": "GET", "path": "/v1/threads", "query_string": query.encode()}
    )

    async def by_fastapi() -> CursorParams:
        values, problems = request_params_to_args(_PAGE_QUERY, request.query_params)
        if problems:
            raise RequestValidationError(problems)
        return await cursor_params(**values)

    assert await _outcome(cursor_params_of(request)) == await _outcome(by_fastapi())


def test_declared_page_parameters_are_the_dependencys(app: FastAPI) -> None:
    paths = get_openapi(title="t", version="0", routes=app.routes)["paths"]
    page = paths["/v1/projects"]["get"]["parameters"]
    assert [p["name"] for p in page] == ["limit", "cursor"]
    assert paths["/v1/threads"]["get"]["parameters"][:2] == page


def test_list_route_is_the_declared_operation(app: FastAPI) -> None:
    """``assembly`` sends ``LIST_ROUTE`` past routing: exactly the path and methods of ``threads.list``."""
    paths = get_openapi(title="t", version="0", routes=app.routes)["paths"]
    assert {"/v1/threads": frozenset({"GET", "HEAD"})} == LIST_ROUTE
    assert paths["/v1/threads"]["get"]["operationId"] == "threads.list"


def test_stored_rows_are_thread_out_field_for_field() -> None:
    assert StoredThread._fields == tuple(ThreadOut.model_fields)
    assert [c.key for c in _STORED_COLUMNS] == [
        "meta" if name == "metadata" else name for name in StoredThread._fields
    ]
    assert all(c.table is threads for c in _STORED_COLUMNS)


AT = datetime(2026, 11, 25, 7, 30, 1, 123456, tzinfo=UTC)
LATER = datetime(2026, 11, 25, 8, 0, 0, 999999, tzinfo=UTC)


@pytest.mark.parametrize("shape", ["sqlite", "postgresql"])
def test_page_json_is_the_models_serialization(shape: str) -> None:
    """Every field set, in both stored forms (SQLite's naive text and JSON text, PostgreSQL's aware
    datetimes and decoded JSON): the bytes ``CursorPage[ThreadOut]`` writes."""
    metadata = {"team": "core", "é": 'q"uote'}
    rows = [
        StoredThread(
            id="thr_01m7yg84h7zr41avmzaw6ksd99",
            title='t\u00e9"\n',
            metadata=json.dumps(metadata) if shape == "sqlite" else metadata,
            active_run_id="run_01m7yg84h7zr41avmzaw6ksd98",
            message_count=3,
            created_at=AT.replace(tzinfo=None).isoformat(sep=" ") if shape == "sqlite" else AT,
            updated_at=LATER.replace(tzinfo=None).isoformat(sep=" ") if shape == "sqlite" else LATER,
        ),
        StoredThread(
            id="thr_01m7yg84h7zr41avmzaw6ksd97",
            title=None,
            metadata="{}" if shape == "sqlite" else {},
            active_run_id=None,
            message_count=0,
            created_at=AT.replace(tzinfo=None).isoformat(sep=" ") if shape == "sqlite" else AT,
            updated_at=AT.replace(tzinfo=None).isoformat(sep=" ") if shape == "sqlite" else AT,
        ),
    ]
    models = [
        ThreadOut(
            id=row.id,
            title=row.title,
            metadata=metadata if row.message_count else {},
            active_run_id=row.active_run_id,
            message_count=row.message_count,
            created_at=AT,
            updated_at=LATER if row.message_count else AT,
        )
        for row in rows
    ]
    for next_cursor in ("Yz", None):
        expected = CursorPage[ThreadOut](data=models, next_cursor=next_cursor).model_dump_json()
        assert page_json(rows, next_cursor) == expected.encode()
    assert page_json([], None) == CursorPage[ThreadOut](data=[], next_cursor=None).model_dump_json().encode()
