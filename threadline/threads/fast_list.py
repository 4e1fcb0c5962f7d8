"""``GET /v1/threads``, the hottest read, served before FastAPI's routing: all of it in this one module.

FastAPI's routing and endpoint wrapper, solving the page dependency, and building and validating a
``ThreadOut`` per row were most of this request's CPU (``bench/threads.py`` measures it). So
``ThreadListEndpoint`` reads the page parameters itself, reads the unfiltered page through the driver
(``PlainQuery``) and writes the body straight from the stored rows. What it would otherwise take from the
framework is derived here from the one declaration, when this module is imported: the page parameters are
validated by FastAPI's own code for the ``cursor_params`` dependency the declared route names, the body's
keys are ``ThreadOut``'s aliases, the stored columns follow ``StoredThread``, and the contract is written
by FastAPI from the route below. What cannot be derived (the body's value formats, the error envelope) is
held to FastAPI's and Pydantic's output byte for byte by tests/threads/test_fast_list.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, NamedTuple, Protocol

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic_core import to_json
from starlette.types import ASGIApp, Receive, Scope, Send

from threadline.access.principal import principal_of
from threadline.kit.db import Conn, Database, stored_isoformat, stored_json
from threadline.kit.errors import ApiError, BadRequest, Reason, render_envelope
from threadline.kit.fastpath import never_routed
from threadline.kit.handlers import request_invalid
from threadline.kit.metadata import MAX_KEY_CHARS, MAX_KEYS, MAX_VALUE_CHARS
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage, CursorParams, cursor_params, cut_page, fetch_cursor_page
from threadline.kit.plain_query import PlainQuery
from threadline.kit.services import ServicesOf
from threadline.kit.statements import JsonTextEquals
from threadline.threads.schemas import ThreadOut
from threadline.threads.tables import threads

# The threads router starts here (``threads.endpoints`` adds the other operations), so that the list's
# declaration, which the contract is written from, lives beside the code that serves it.
router = APIRouter(prefix="/v1/threads", tags=["threads"])

LIST_OPERATION = "threads.list"
# ``metadata[KEY]=VALUE``, declared as OpenAPI's deepObject so that generated requests (schemathesis) try
# keys of every kind, quotes, dots and brackets included, as clients may send them.
METADATA_FILTER = {
    "name": "metadata",
    "in": "query",
    "required": False,
    "description": "`metadata[KEY]=VALUE`: only threads whose metadata has this value at this key; several "
    "keys must all match. Any key a thread may hold (1 to 64 characters) can be filtered on.",
    "schema": {
        "type": "object",
        "maxProperties": MAX_KEYS,
        "propertyNames": {"minLength": 1, "maxLength": MAX_KEY_CHARS},
        "additionalProperties": {"type": "string", "maxLength": MAX_VALUE_CHARS},
    },
    "style": "deepObject",
    "explode": True,
}


@router.get(
    "",
    operation_id=LIST_OPERATION,
    response_model=CursorPage[ThreadOut],
    responses=errors(400, *AUTHENTICATED),
    openapi_extra={"parameters": [METADATA_FILTER]},
)
async def list_threads(request: Request, page: Annotated[CursorParams, Depends(cursor_params)]) -> None:
    """The organization's threads, newest first."""
    never_routed(request)  # served by ThreadListEndpoint


_ROUTE = router.routes[-1]
if not isinstance(_ROUTE, APIRoute) or not _ROUTE.methods:  # pragma: no cover - the declaration above
    raise TypeError("the thread list's declaration is not an APIRoute with methods")
# The paths and methods ``assembly.assemble`` sends here rather than to FastAPI (HEAD with GET, as routing).
LIST_ROUTE = {_ROUTE.path: frozenset({*_ROUTE.methods, "HEAD"})}
# The declared page parameters, as FastAPI reads them for ``cursor_params``: each query field with its
# default and its own validator (FastAPI's, so the same checks and the same errors). Reading them as below is
# FastAPI's ``request_params_to_args`` for such fields (optional, single-valued, default not validated),
# without the inspection of each field's annotation it repeats on every request. That the fields are such
# (and the FastAPI internals this relies on) is held by tests/threads/test_fast_list_invariants.py.
_PAGE_QUERY = next(d for d in _ROUTE.dependant.dependencies if d.call is cursor_params).query_params
_PAGE_FIELDS = [(field.name, field.alias, field.default, field.validate) for field in _PAGE_QUERY]


async def cursor_params_of(request: Request) -> CursorParams:
    """``cursor_params`` as the declared dependency gives it, without FastAPI's dependency solving (a
    large share of this request's CPU), failing with the same ``RequestValidationError``."""
    query = request.query_params
    values: dict[str, Any] = {}
    problems: list[Any] = []
    for name, alias, default, validate in _PAGE_FIELDS:
        raw = query.get(alias)
        if raw is None:
            values[name] = default
            continue
        value, failed = validate(raw, values, loc=("query", alias))
        if failed:
            problems.extend(failed)
        else:
            values[name] = value
    if problems:
        raise RequestValidationError(problems)
    return await cursor_params(**values)


def metadata_filter(request: Request) -> dict[str, str]:
    """The ``metadata[key]=value`` parameters (``METADATA_FILTER``), which FastAPI cannot declare."""
    wanted: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if not (name.startswith("metadata[") and name.endswith("]")):
            continue
        key = name[len("metadata[") : -1]
        if not 1 <= len(key) <= MAX_KEY_CHARS or len(value) > MAX_VALUE_CHARS:
            raise BadRequest(f"metadata filter {name!r} is out of bounds.", reason=Reason.VALIDATION_FAILED)
        wanted[key] = value
    if len(wanted) > MAX_KEYS:
        raise BadRequest(f"At most {MAX_KEYS} metadata filters.", reason=Reason.VALIDATION_FAILED)
    return wanted


class StoredThread(NamedTuple):
    """A thread as the driver returns it (``kit.plain_query.PlainQuery``), in ``ThreadOut``'s field order:
    times and metadata still in stored form (see ``kit.db.stored_isoformat``, ``stored_json``)."""

    id: str
    title: str | None
    metadata: Any
    active_run_id: str | None
    message_count: int
    created_at: datetime | str
    updated_at: datetime | str


_COLUMN_OF = {"metadata": "meta"}  # the field names that differ from their column's
_STORED_COLUMNS = [threads.c[_COLUMN_OF.get(name, name)] for name in StoredThread._fields]
# The unfiltered list, newest first, tenant-scoped: the first page and the pages after a cursor.
_NEWEST = (
    sa.select(*_STORED_COLUMNS)
    .where(threads.c.organization_id == sa.bindparam("organization_id"))
    .order_by(threads.c.id.desc())
    .limit(sa.bindparam("limit"))
)
_NEWEST_PAGE = PlainQuery(_NEWEST)
_NEWEST_PAGE_AFTER = PlainQuery(_NEWEST.where(threads.c.id < sa.bindparam("after_id")))


async def newest_page(
    db: Database, organization_id: str, params: CursorParams
) -> tuple[Sequence[StoredThread], str | None]:
    """The organization's threads, newest first, unfiltered (nearly every list): one statement, run alone
    through the driver (``Database.read``)."""
    parameters = {"organization_id": organization_id, "limit": params.limit + 1}
    if params.after_id is None:
        found = await db.read(_NEWEST_PAGE, parameters)
    else:
        found = await db.read(_NEWEST_PAGE_AFTER, {**parameters, "after_id": params.after_id})
    page, next_cursor = cut_page(found, params, lambda row: str(row[0]))
    return [StoredThread._make(row) for row in page], next_cursor


async def filtered_page(
    conn: Conn, organization_id: str, params: CursorParams, metadata: Mapping[str, str]
) -> tuple[Sequence[StoredThread], str | None]:
    """Newest first, only those whose metadata holds every given key and value (the statement depends on
    the keys, so it goes through SQLAlchemy: rows hold decoded values, which ``page_json`` accepts too)."""
    query = sa.select(*_STORED_COLUMNS).where(threads.c.organization_id == organization_id)
    for key, value in metadata.items():
        query = query.where(JsonTextEquals(threads.c.meta, key, value))
    rows, next_cursor = await fetch_cursor_page(conn, query, threads.c.id, params)
    return [StoredThread._make(row) for row in rows], next_cursor


async def list_page(
    db: Database, organization_id: str, params: CursorParams, metadata: Mapping[str, str]
) -> tuple[Sequence[StoredThread], str | None]:
    """Takes the database rather than a request transaction: the unfiltered list (the hot one) is a single
    statement and runs without one (``Database.read``); a filtered list opens a read transaction, which
    has nothing to commit."""
    if not metadata:
        return await newest_page(db, organization_id, params)
    async with db.transaction(write=False) as conn:
        return await filtered_page(conn, organization_id, params, metadata)


_KEY = {name: field.alias or name for name, field in ThreadOut.model_fields.items()}
_ID, _TITLE, _METADATA, _ACTIVE_RUN_ID, _MESSAGE_COUNT, _CREATED_AT, _UPDATED_AT = (
    _KEY[name] for name in StoredThread._fields
)
_DATA, _NEXT_CURSOR = (field.alias or name for name, field in CursorPage[ThreadOut].model_fields.items())


def page_json(threads: Sequence[StoredThread], next_cursor: str | None) -> bytes:
    """The body of ``CursorPage[ThreadOut]``, written straight from stored rows (a ``ThreadOut`` per row,
    validated and serialized, was a large share of the request)."""
    return to_json(
        {
            _DATA: [
                {
                    _ID: thread.id,
                    _TITLE: thread.title,
                    _METADATA: stored_json(thread.metadata),
                    _ACTIVE_RUN_ID: thread.active_run_id,
                    _MESSAGE_COUNT: thread.message_count,
                    _CREATED_AT: stored_isoformat(thread.created_at),
                    _UPDATED_AT: stored_isoformat(thread.updated_at),
                }
                for thread in threads
            ],
            _NEXT_CURSOR: next_cursor,
        }
    )


class ListServices(Protocol):
    """What the list reads from the process's services."""

    db: Database


class ThreadListEndpoint:
    """Serves ``LIST_ROUTE`` as plain ASGI, behind the same middleware (request id, authentication, rate
    limit) but outside FastAPI's routing (``assembly.assemble``'s ``served_before_routing``), as the
    intake serves its ingestion."""

    def __init__(self, app: ASGIApp, *, runtime: ServicesOf[ListServices]) -> None:
        self.app = app  # never called: only GET and HEAD on this path come here (``LIST_ROUTE``)
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            page = await cursor_params_of(request)
            threads, next_cursor = await list_page(
                self.runtime.services.db,
                principal_of(request).organization_id,
                page,
                metadata_filter(request),
            )
        except RequestValidationError as exc:
            response = render_envelope(scope, request_invalid(exc), LIST_OPERATION)
        except ApiError as error:
            response = render_envelope(scope, error, LIST_OPERATION)
        else:
            response = Response(page_json(threads, next_cursor), media_type="application/json")
        await response(scope, receive, send)
