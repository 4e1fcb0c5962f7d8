"""``/search``: message search with the API's syntax (``GET /v1/search/messages``), its snippets with the
matches highlighted (only the API's ``<mark>`` becomes markup) and its pages."""

from __future__ import annotations

from typing import Annotated, Protocol
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from threadline.dashboard.web import ViewerDep, render
from threadline.kit.db import Database
from threadline.kit.deps import get_services
from threadline.kit.errors import BadRequest
from threadline.kit.pagination import PageParams
from threadline.messages.repository import Role
from threadline.search import service
from threadline.search.backend import MessageFilter, SearchBackend
from threadline.search.query import MAX_QUERY_CHARS

router = APIRouter()

PAGE_SIZE = 20
ROLES: tuple[Role, ...] = ("user", "assistant", "system", "tool")


class SearchPageServices(Protocol):
    """What the search page reads from the process's services."""

    db: Database
    search: SearchBackend


ServicesDep = Annotated[SearchPageServices, Depends(get_services)]


@router.get("/search")
async def search_page(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    role: Annotated[str, Query(max_length=20)] = "",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> Response:
    """No words: the form and the syntax, no search (the API asks for ``q``)."""
    results = None
    error = None
    chosen = next((known for known in ROLES if known == role), None)
    if role and chosen is None:
        error = f"The role must be one of {', '.join(ROLES)}."
    elif q.strip():
        try:
            results = await service.search_messages(
                services.db,
                services.search,
                viewer.organization_id,
                q,
                MessageFilter(thread_id=None, role=chosen),
                PageParams(page, PAGE_SIZE),
            )
        except BadRequest as refused:
            error = refused.message
    base = [("q", q)] + ([("role", chosen)] if chosen else [])

    def page_url(number: int) -> str:
        return "/search?" + urlencode([*base, ("page", str(number))])

    return render(
        request,
        "search/search.html",
        viewer,
        status_code=400 if error else 200,
        q=q,
        role=role,
        roles=ROLES,
        results=results,
        error=error,
        page_url=page_url,
    )
