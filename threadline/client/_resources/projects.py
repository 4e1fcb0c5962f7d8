"""``client.projects``: /v1/projects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from threadline.client._resource import Page, Resource


class Projects(Resource):
    path = "/projects"

    def create(self, *, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("POST", self.path, json={"name": name})
        return result

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Page:
        return self._page({"limit": limit, "cursor": cursor})

    def iterate(self) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor))

    def get(self, project_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{project_id}")
        return result
