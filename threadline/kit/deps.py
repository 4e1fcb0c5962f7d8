"""Typed dependencies every handler uses. The connection dependency is the only place a request's
transaction commits or rolls back; it ends before the response is sent, so 2xx means committed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request

from threadline.kit.db import Conn, Database
from threadline.kit.pagination import CursorParams, PageParams, cursor_params, page_params

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_services(request: Request) -> Any:
    """The process's services. Handlers name what they read of them as a protocol of their own
    (``Annotated[TheirServices, Depends(get_services)]``); the composition root checks that it fits."""
    return request.app.state.runtime.services


class _WithDatabase(Protocol):
    db: Database


async def get_connection(request: Request) -> AsyncIterator[Conn]:
    services: _WithDatabase = await get_services(request)
    async with services.db.transaction(write=request.method not in _READ_METHODS) as conn:
        yield conn


ConnDep = Annotated[Conn, Depends(get_connection, scope="function")]
CursorDep = Annotated[CursorParams, Depends(cursor_params)]
PageDep = Annotated[PageParams, Depends(page_params)]
