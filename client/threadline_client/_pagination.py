"""Pages of a list, and walking them all.

Two kinds, as the contract has them: cursor lists (``{"data", "nextCursor"}``: threads, messages, runs,
keys, logs…) and numbered pages (``{"data", "pagination"}``: searches and the billing ledger). A page
object is one page (``.data``, ``.next_cursor`` or ``.pagination``); iterating it walks every item from
there to the last page, fetching each next page when the previous one is used up. Numbered pages can
shift while they are walked (an entry written meanwhile pushes older ones to later pages): an item already
given (by id) is not given again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from threadline_client._core import Call
from threadline_client._models import LedgerPagination, SearchPagination

if TYPE_CHECKING:
    from threadline_client._transport import AsyncTransport, SyncTransport

T = TypeVar("T")


class Page(Generic[T]):
    """One page. ``next_cursor`` (cursor lists) or ``pagination`` (numbered pages) says what follows."""

    def __init__(
        self,
        call: Call[Any],
        data: list[T],
        next_cursor: str | None = None,
        pagination: SearchPagination | LedgerPagination | None = None,
    ) -> None:
        self._call = call
        self.data = data
        self.next_cursor = next_cursor
        self.pagination = pagination

    def has_next_page(self) -> bool:
        if self.pagination is not None:
            return bool(self.data) and self.pagination.page < self.pagination.total_pages
        return self.next_cursor is not None

    def _next_call(self) -> Call[Any]:
        if self.pagination is not None:
            return self._call.with_params(page=self.pagination.page + 1)
        return self._call.with_params(cursor=self.next_cursor)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(data=[{len(self.data)} items], next_cursor={self.next_cursor!r})"


def page_parser(item: Callable[[Any], T], numbered: bool) -> Callable[[Call[Any], Any], Page[T]]:
    """How a list answer becomes a ``Page`` (the call is kept to fetch the next page)."""

    def parse(call: Call[Any], body: Any) -> Page[T]:
        data = [item(entry) for entry in body["data"]]
        if not numbered:
            return Page(call, data, next_cursor=body["nextCursor"])
        raw = body["pagination"]
        pagination = (
            LedgerPagination.model_validate(raw) if "total" in raw else SearchPagination.model_validate(raw)
        )
        return Page(call, data, pagination=pagination)

    return parse


def _unseen(page: Page[T], seen: set[str]) -> Iterator[T]:
    """The page's items not given yet. Only numbered pages shift; a cursor page never repeats an item,
    and its items may share an id (an agent's versions), so it is given whole."""
    if page.pagination is None:
        yield from page.data
        return
    for item in page.data:
        key = getattr(item, "id", None)
        if isinstance(key, str):
            if key in seen:
                continue
            seen.add(key)
        yield item


class SyncPage(Page[T]):
    _transport: SyncTransport
    _parse: Callable[[Call[Any], Any], Page[T]]

    def get_next_page(self) -> SyncPage[T]:
        return fetch_sync(self._transport, self._next_call(), self._parse)

    def iter_pages(self) -> Iterator[SyncPage[T]]:
        page: SyncPage[T] = self
        while True:
            yield page
            if not page.has_next_page():
                return
            page = page.get_next_page()

    def __iter__(self) -> Iterator[T]:
        seen: set[str] = set()
        for page in self.iter_pages():
            yield from _unseen(page, seen)


def fetch_sync(
    transport: SyncTransport, call: Call[Any], parse: Callable[[Call[Any], Any], Page[T]]
) -> SyncPage[T]:
    found = parse(call, transport.send(call))
    result: SyncPage[T] = SyncPage(call, found.data, found.next_cursor, found.pagination)
    result._transport, result._parse = transport, parse
    return result


class AsyncPage(Page[T]):
    _transport: AsyncTransport
    _parse: Callable[[Call[Any], Any], Page[T]]

    async def get_next_page(self) -> AsyncPage[T]:
        return await fetch_async(self._transport, self._next_call(), self._parse)

    async def iter_pages(self) -> AsyncIterator[AsyncPage[T]]:
        page: AsyncPage[T] = self
        while True:
            yield page
            if not page.has_next_page():
                return
            page = await page.get_next_page()

    async def __aiter__(self) -> AsyncIterator[T]:
        seen: set[str] = set()
        async for page in self.iter_pages():
            for item in _unseen(page, seen):
                yield item


async def fetch_async(
    transport: AsyncTransport, call: Call[Any], parse: Callable[[Call[Any], Any], Page[T]]
) -> AsyncPage[T]:
    found = parse(call, await transport.send(call))
    result: AsyncPage[T] = AsyncPage(call, found.data, found.next_cursor, found.pagination)
    result._transport, result._parse = transport, parse
    return result


class AsyncPager(Generic[T]):
    """What an async list method returns: ``await`` it for the first page, or ``async for`` over it for
    every item of every page."""

    def __init__(
        self, transport: AsyncTransport, call: Call[Any], parse: Callable[[Call[Any], Any], Page[T]]
    ) -> None:
        self._transport, self._call, self._parse = transport, call, parse

    def __await__(self) -> Generator[Any, None, AsyncPage[T]]:
        return fetch_async(self._transport, self._call, self._parse).__await__()

    async def __aiter__(self) -> AsyncIterator[T]:
        first = await self
        async for item in first:
            yield item
