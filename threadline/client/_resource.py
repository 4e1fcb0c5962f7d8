"""What every group of the API shares: cursor pages and walking them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from threadline.client._client import Threadline


@dataclass(frozen=True)
class Page:
    data: list[dict[str, Any]]
    next_cursor: str | None


class Resource:
    path: str

    def __init__(self, client: Threadline) -> None:
        self._client = client

    def _page(self, params: dict[str, Any], path: str | None = None) -> Page:
        body = self._client.request(
            "GET", path or self.path, params={k: v for k, v in params.items() if v is not None}
        )
        return Page(data=body["data"], next_cursor=body["nextCursor"])

    def _iterate(self, fetch: Callable[[str | None], Page]) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page.data
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _stream_token(
        self, stream_path: str, ttl_seconds: int | None, origins: Sequence[str] | None
    ) -> dict[str, Any]:
        """``{"token", "expiresAt", runId | threadId}``: a browser opens the stream with ``?token=``."""
        body: dict[str, Any] = {}
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        if origins is not None:
            body["origins"] = list(origins)
        result: dict[str, Any] = self._client.request("POST", f"{stream_path}/stream-tokens", json=body)
        return result
