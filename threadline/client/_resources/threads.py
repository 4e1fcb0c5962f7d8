"""``client.threads``: /v1/threads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from threadline.client._resource import Page, Resource


class Threads(Resource):
    path = "/threads"

    def create(self, *, title: str | None = None, metadata: dict[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"metadata": metadata or {}}
        if title is not None:
            body["title"] = title
        result: dict[str, Any] = self._client.request("POST", self.path, json=body)
        return result

    def list(
        self, *, limit: int | None = None, cursor: str | None = None, metadata: dict[str, str] | None = None
    ) -> Page:
        filters = {f"metadata[{key}]": value for key, value in (metadata or {}).items()}
        return self._page({"limit": limit, "cursor": cursor, **filters})

    def iterate(self, *, metadata: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor, metadata=metadata))

    def get(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{thread_id}")
        return result

    def update(self, thread_id: str, **changes: Any) -> dict[str, Any]:
        """``title=...`` and/or ``metadata=...``; ``title=None`` clears the title."""
        result: dict[str, Any] = self._client.request("PATCH", f"{self.path}/{thread_id}", json=changes)
        return result

    def delete(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("DELETE", f"{self.path}/{thread_id}")
        return result

    def stream(self, thread_id: str, cursor: str | None = None) -> Iterator[dict[str, Any]]:
        """The events of the thread's active run (else a replay of its latest run) until that run's
        ``[DONE]``; nothing when the thread has no run. A ``cursor`` resumes the run it came from."""
        return self._client.stream(f"{self.path}/{thread_id}/stream", {}, cursor)

    def create_stream_token(
        self, thread_id: str, *, ttl_seconds: int | None = None, origins: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """A short-lived token (``st_…``, shown once) for an end user's browser to read this thread's
        stream (which follows its runs) as ``GET /v1/threads/{thread_id}/stream?token=…``; see
        ``client.runs.create_stream_token``."""
        return self._stream_token(f"{self.path}/{thread_id}", ttl_seconds, origins)
