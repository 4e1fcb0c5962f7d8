"""``client.billing``: /v1/billing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from threadline.client._resource import Resource


class Billing(Resource):
    """The organization's credits (read-only: an operator grants them with ``threadline billing grant``).
    The ledger is page-based: ``transactions`` returns ``{"data": [...], "pagination": {...}}``."""

    path = "/billing"

    def balance(self) -> dict[str, Any]:
        """``{"balance": credits, "updatedAt": when the last entry was written, or None}``."""
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/balance")
        return result

    def transactions(self, *, page: int = 1, limit: int | None = None) -> dict[str, Any]:
        """One page of the ledger, newest first (``pagination``: page, limit, totalPages, total)."""
        params = {k: v for k, v in {"page": page, "limit": limit}.items() if v is not None}
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/transactions", params=params)
        return result

    def iterate_transactions(self) -> Iterator[dict[str, Any]]:
        """Every entry, newest first, page after page until ``totalPages``. Entries written meanwhile push
        older ones to later pages; each entry is still given once (by id)."""
        seen: set[str] = set()
        page = 1
        while True:
            body = self.transactions(page=page, limit=100)
            for entry in body["data"]:
                if entry["id"] not in seen:
                    seen.add(entry["id"])
                    yield entry
            if not body["data"] or page >= body["pagination"]["totalPages"]:
                return
            page += 1
