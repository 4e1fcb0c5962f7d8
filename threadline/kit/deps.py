"""Typed dependencies every handler uses. The connection dependency is the only place a request's
transaction commits or rolls back; it ends before the response is sent, so 2xx means committed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, PageParams, cursor_params, page_params

if TYPE_CHECKING:
    from threadline.runtime import Services

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.runtime.services
    return services


ServicesDep = Annotated["Services", Depends(get_services)]


async def get_connection(request: Request) -> AsyncIterator[Conn]:
    async with (await get_services(request)).db.transaction(
        write=request.method not in _READ_METHODS
    ) as conn:
        yield conn


ConnDep = Annotated[Conn, Depends(get_connection, scope="function")]
CursorDep = Annotated[CursorParams, Depends(cursor_params)]
PageDep = Annotated[PageParams, Depends(page_params)]
