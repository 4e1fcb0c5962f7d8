"""``client.logs``: /v1/logs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from threadline.client._resource import Page, Resource


class Logs(Resource):
    """Filters: ``project_id``, ``level`` (that level and above), ``kind`` (log, event), ``since``,
    ``until`` (ISO 8601), ``q`` (text)."""

    path = "/logs"

    @staticmethod
    def _filters(**filters: Any) -> dict[str, Any]:
        names = {"project_id": "projectId"}
        return {names.get(name, name): value for name, value in filters.items() if value is not None}

    def list(self, *, limit: int | None = None, cursor: str | None = None, **filters: Any) -> Page:
        return self._page({"limit": limit, "cursor": cursor, **self._filters(**filters)})

    def iterate(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """Newest first, every page; a filtered page may be short (see ``GET /v1/logs``)."""
        return self._iterate(lambda cursor: self.list(cursor=cursor, **filters))

    def tail(self, *, cursor: str | None = None, **filters: Any) -> Iterator[dict[str, Any]]:
        """Records as they arrive (each with its ``cursor``), forever or until ``until`` has passed."""
        return self._client.stream("/logs/stream", self._filters(**filters), cursor)
