from __future__ import annotations

from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, Query, Request

from threadline.access.principal import principal_of
from threadline.kit.db import Database
from threadline.kit.deps import PageDep, get_services
from threadline.kit.errors import BadRequest
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.schemas import NOT_BLANK_STRIP
from threadline.messages.repository import Role
from threadline.search import service
from threadline.search.backend import MessageFilter, SearchBackend
from threadline.search.query import MAX_QUERY_CHARS
from threadline.search.schemas import MessageResults, ThreadResults


class SearchServices(Protocol):
    """What the search handlers read from the process's services."""

    db: Database
    search: SearchBackend


ServicesDep = Annotated[SearchServices, Depends(get_services)]

router = APIRouter(prefix="/v1/search", tags=["search"])

_Q_DESCRIPTION = (
    'Words (each also matches as a prefix and by stem), "quoted phrases", OR between alternatives, '
    "-word to exclude."
)
# ``q`` is required, but checked by the handler (``_required``) so that its absence is answered with this
# search's own 400; the contract declares it required all the same, in place of FastAPI's optional one.
Q = Annotated[str | None, Query(max_length=MAX_QUERY_CHARS, include_in_schema=False)]
_Q_PARAMETER = {
    "name": "q",
    "in": "query",
    "required": True,
    "description": _Q_DESCRIPTION,
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": NOT_BLANK_STRIP},
}
_WITH_Q: dict[str, Any] = {"parameters": [_Q_PARAMETER]}


def _required(q: str | None) -> str:
    if q is None or not q.strip():
        raise BadRequest("Give the search words in the q query parameter.", missing_context=["q"])
    return q


@router.get(
    "/threads",
    operation_id="search.threads",
    response_model=ThreadResults,
    responses=errors(400, *AUTHENTICATED),
    openapi_extra=_WITH_Q,
)
async def search_threads(
    request: Request, page: PageDep, services: ServicesDep, q: Q = None
) -> ThreadResults:
    """Threads whose title or metadata values match, by relevance then recency; page-based."""
    return await service.search_threads(
        services.db, services.search, principal_of(request).organization_id, _required(q), page
    )


@router.get(
    "/messages",
    operation_id="search.messages",
    response_model=MessageResults,
    responses=errors(400, *AUTHENTICATED),
    openapi_extra=_WITH_Q,
)
async def search_messages(
    request: Request,
    page: PageDep,
    services: ServicesDep,
    q: Q = None,
    threadId: Annotated[str | None, Query(max_length=40, description="Only this thread's messages.")] = None,
    role: Annotated[Role | None, Query(description="Only messages with this role.")] = None,
) -> MessageResults:
    """Messages whose content matches, by relevance then recency; page-based."""
    where = MessageFilter(thread_id=threadId, role=role)
    return await service.search_messages(
        services.db, services.search, principal_of(request).organization_id, _required(q), where, page
    )
