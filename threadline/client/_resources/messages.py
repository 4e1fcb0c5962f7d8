"""``client.messages``: a thread's messages, /v1/threads/{id}/messages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from threadline.client._resource import Page, Resource


class Messages(Resource):
    def create(
        self, thread_id: str, *, content: str, role: str = "user", metadata: dict[str, str] | None = None
    ) -> dict[str, Any]:
        body = {"content": content, "role": role, "metadata": metadata or {}}
        result: dict[str, Any] = self._client.request("POST", f"/threads/{thread_id}/messages", json=body)
        return result

    def list(self, thread_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        body = self._client.request(
            "GET",
            f"/threads/{thread_id}/messages",
            params={k: v for k, v in {"limit": limit, "cursor": cursor}.items() if v is not None},
        )
        return Page(data=body["data"], next_cursor=body["nextCursor"])

    def iterate(self, thread_id: str) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(thread_id, limit=100, cursor=cursor))

    def get(self, thread_id: str, message_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"/threads/{thread_id}/messages/{message_id}")
        return result
