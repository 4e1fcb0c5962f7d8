"""The two pagination strategies of the spec, each written once.

Cursor pages (most lists): keyset pagination on the time-ordered id, so a page costs the same at any depth
and rows inserted while a client walks never shift or repeat items. The cursor is opaque to clients.

Page-based (search and billing only): one-based ``page`` and ``limit`` with a total count, because those
results are ranked or audited and users want "page 3 of 12".
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Generic, TypeVar

import sqlalchemy as sa
from fastapi import Query

from threadline.kit.db import Conn
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.schemas import ResponseModel

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_CURSOR_VERSION = "c1:"
_MAX_CURSOR_CHARS = 200
_LIMIT_DESCRIPTION = "Items per page."
_CURSOR_DESCRIPTION = "The `nextCursor` of the previous page."
_ID_PATTERN = re.compile(r"^[a-z]{2,5}_[0-9a-z]{26}$")

T = TypeVar("T")
R = TypeVar("R")


class CursorPage(ResponseModel, Generic[T]):
    data: list[T]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class CursorParams:
    limit: int
    after_id: str | None


def encode_cursor(last_id: str) -> str:
    return base64.urlsafe_b64encode((_CURSOR_VERSION + last_id).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raw = ""
    last_id = raw[len(_CURSOR_VERSION) :]
    if not raw.startswith(_CURSOR_VERSION) or not _ID_PATTERN.match(last_id):
        raise BadRequest(
            "The cursor is malformed; pass back the nextCursor value of a previous page unchanged.",
            reason=Reason.INVALID_CURSOR,
        )
    return last_id


async def cursor_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description=_LIMIT_DESCRIPTION)] = DEFAULT_LIMIT,
    cursor: Annotated[
        str | None, Query(max_length=_MAX_CURSOR_CHARS, description=_CURSOR_DESCRIPTION)
    ] = None,
) -> CursorParams:
    return CursorParams(limit=limit, after_id=decode_cursor(cursor) if cursor else None)


async def fetch_cursor_page(
    conn: Conn,
    query: sa.Select[tuple[object, ...]],
    id_column: sa.ColumnElement[str],
    params: CursorParams,
    *,
    newest_first: bool = True,
) -> tuple[Sequence[sa.Row[tuple[object, ...]]], str | None]:
    """Run ``query`` (already filtered and tenant-scoped) one page at a time; returns rows and nextCursor."""
    if params.after_id is not None:
        query = query.where(id_column < params.after_id if newest_first else id_column > params.after_id)
    query = query.order_by(id_column.desc() if newest_first else id_column.asc()).limit(params.limit + 1)
    rows = (await conn.execute(query)).all()
    return cut_page(rows, params, lambda row: str(row._mapping[id_column]))


def cut_page(
    rows: Sequence[R], params: CursorParams, id_of: Callable[[R], str]
) -> tuple[Sequence[R], str | None]:
    """``rows``: up to ``params.limit + 1`` rows in page order (the extra one says another page follows);
    returns the page and its nextCursor."""
    if len(rows) <= params.limit:
        return rows, None
    rows = rows[: params.limit]
    return rows, encode_cursor(id_of(rows[-1]))


@dataclass(frozen=True, slots=True)
class PageParams:
    page: int
    limit: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit


async def page_params(
    page: Annotated[int, Query(ge=1, le=1_000_000, description="One-based page number.")] = 1,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per page.")] = DEFAULT_LIMIT,
) -> PageParams:
    return PageParams(page=page, limit=limit)


def total_pages(total: int, limit: int) -> int:
    return math.ceil(total / limit)


class SearchPagination(ResponseModel):
    page: int
    limit: int
    total_pages: int
    total_results: int


class LedgerPagination(ResponseModel):
    page: int
    limit: int
    total_pages: int
    total: int


async def fetch_numbered_page(
    conn: Conn, query: sa.Select[tuple[object, ...]], params: PageParams
) -> tuple[Sequence[sa.Row[tuple[object, ...]]], int]:
    """One window of an ordered query and the total it is a window of (one count, one window)."""
    total = (
        await conn.execute(sa.select(sa.func.count()).select_from(query.order_by(None).subquery()))
    ).scalar_one()
    rows = (await conn.execute(query.offset(params.offset).limit(params.limit))).all() if total else []
    return rows, int(total)
