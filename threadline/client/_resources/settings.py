"""``client.settings``: /v1/settings."""

from __future__ import annotations

from typing import Any

from threadline.client._resource import Resource


class SettingsResource(Resource):
    def get(self) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", "/settings")
        return result

    def update(self, **changes: Any) -> dict[str, Any]:
        """camelCase field names, as on the wire: ``defaultModel=...``, ``logRetentionDays=...``."""
        result: dict[str, Any] = self._client.request("PATCH", "/settings", json=changes)
        return result
