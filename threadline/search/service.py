"""Search: parse the query once, let the dialect's backend rank and count, shape the page."""

from __future__ import annotations

from threadline.kit.db import Database
from threadline.kit.pagination import PageParams, SearchPagination, total_pages
from threadline.messages.repository import from_row as message_from_row
from threadline.messages.schemas import MessageOut
from threadline.search.backend import MessageFilter, SearchBackend
from threadline.search.query import parse
from threadline.search.schemas import MessageHit, MessageResults, ThreadHit, ThreadResults
from threadline.threads.repository import from_row as thread_from_row
from threadline.threads.schemas import ThreadOut


def _pagination(page: PageParams, total: int) -> SearchPagination:
    return SearchPagination(
        page=page.page, limit=page.limit, total_pages=total_pages(total, page.limit), total_results=total
    )


async def search_threads(
    db: Database, backend: SearchBackend, organization_id: str, q: str, page: PageParams
) -> ThreadResults:
    query = parse(q)
    async with db.transaction(write=False, long=True) as conn:  # a search may take milliseconds
        hits = await backend.threads(conn, organization_id, query, page)
    data = [
        ThreadHit(**ThreadOut.of(thread_from_row(row)).model_dump(), snippet=snippet)
        for row, snippet in hits.rows
    ]
    return ThreadResults(data=data, pagination=_pagination(page, hits.total))


async def search_messages(
    db: Database,
    backend: SearchBackend,
    organization_id: str,
    q: str,
    where: MessageFilter,
    page: PageParams,
) -> MessageResults:
    query = parse(q)
    async with db.transaction(write=False, long=True) as conn:  # a search may take milliseconds
        hits = await backend.messages(conn, organization_id, query, where, page)
    data = [
        MessageHit(**MessageOut.of(message_from_row(row)).model_dump(), snippet=snippet)
        for row, snippet in hits.rows
    ]
    return MessageResults(data=data, pagination=_pagination(page, hits.total))
