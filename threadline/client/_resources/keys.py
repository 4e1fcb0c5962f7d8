"""``client.keys``: /v1/keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from threadline.client._resource import Page, Resource


class Keys(Resource):
    path = "/keys"

    def create(
        self, *, name: str, type: str, project_id: str | None = None, rate_limit_per_minute: int | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "type": type}
        if project_id is not None:
            body["projectId"] = project_id
        if rate_limit_per_minute is not None:
            body["rateLimitPerMinute"] = rate_limit_per_minute
        result: dict[str, Any] = self._client.request("POST", self.path, json=body)
        return result

    def list(self, *, limit: int | None = None, cursor: str | None = None, type: str | None = None) -> Page:
        return self._page({"limit": limit, "cursor": cursor, "type": type})

    def iterate(self, *, type: str | None = None) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor, type=type))

    def get(self, key_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{key_id}")
        return result

    def revoke(self, key_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("DELETE", f"{self.path}/{key_id}")
        return result
