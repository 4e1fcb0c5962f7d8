"""``client.automations``: /v1/automations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from threadline.client._resource import Page, Resource


class Automations(Resource):
    """Rules that start runs: on a schedule (``{"type": "schedule", "cron", "timezone"}``) or when an
    ingested log record matches (``{"type": "log", "projectId", "level", "contains", "cooldownSeconds"}``).
    ``trigger`` and ``action`` (``{"prompt", "threadId", "model"}``) are sent as given: camelCase field
    names, as on the wire."""

    path = "/automations"

    def create(
        self,
        *,
        name: str,
        trigger: dict[str, Any],
        action: dict[str, Any],
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "trigger": trigger, "action": action}
        if enabled is not None:
            body["enabled"] = enabled
        result: dict[str, Any] = self._client.request("POST", self.path, json=body)
        return result

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The organization's automations, newest first."""
        return self._page({"limit": limit, "cursor": cursor})

    def iterate(self) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor))

    def get(self, automation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{automation_id}")
        return result

    def update(self, automation_id: str, **changes: Any) -> dict[str, Any]:
        """``name=...``, ``enabled=...``, ``trigger=...``, ``action=...``: the fields given are replaced,
        ``trigger`` and ``action`` as whole objects (a field left out of them takes its default)."""
        result: dict[str, Any] = self._client.request("PATCH", f"{self.path}/{automation_id}", json=changes)
        return result

    def delete(self, automation_id: str) -> dict[str, Any]:
        """The deleted automation; the runs it started stay."""
        result: dict[str, Any] = self._client.request("DELETE", f"{self.path}/{automation_id}")
        return result

    def trigger(self, automation_id: str) -> dict[str, Any]:
        """Fires it now (enabled or not, cooldown or not) and returns the run it started."""
        result: dict[str, Any] = self._client.request("POST", f"{self.path}/{automation_id}/trigger")
        return result
