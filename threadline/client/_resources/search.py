"""``client.search``: /v1/search."""

from __future__ import annotations

from typing import Any

from threadline.client._resource import Resource


class Search(Resource):
    """Page-based: each call returns ``{"data": [...], "pagination": {...}}``."""

    def threads(self, q: str, *, page: int = 1, limit: int | None = None) -> dict[str, Any]:
        params = {k: v for k, v in {"q": q, "page": page, "limit": limit}.items() if v is not None}
        result: dict[str, Any] = self._client.request("GET", "/search/threads", params=params)
        return result

    def messages(
        self,
        q: str,
        *,
        page: int = 1,
        limit: int | None = None,
        thread_id: str | None = None,
        role: str | None = None,
    ) -> dict[str, Any]:
        params = {"q": q, "page": page, "limit": limit, "threadId": thread_id, "role": role}
        result: dict[str, Any] = self._client.request(
            "GET", "/search/messages", params={k: v for k, v in params.items() if v is not None}
        )
        return result
