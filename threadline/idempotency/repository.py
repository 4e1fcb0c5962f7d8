"""Idempotency key rows, scoped to one organization when the repository is made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.idempotency.tables import idempotency_keys
from threadline.kit.db import Conn


@dataclass(frozen=True, slots=True)
class Stored:
    fingerprint: str
    status: int | None  # None: in flight
    content_type: str | None
    body: bytes | None
    created_at: datetime


class IdempotencyRepository:
    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    def _mine(self, key: str) -> sa.ColumnElement[bool]:
        k = idempotency_keys.c
        return sa.and_(k.organization_id == self._organization_id, k.key == key)

    async def get(self, key: str) -> Stored | None:
        k = idempotency_keys.c
        query = sa.select(k.fingerprint, k.status, k.content_type, k.body, k.created_at).where(
            self._mine(key)
        )
        row = (await self._conn.execute(query)).mappings().first()
        return Stored(**row) if row else None

    async def take_over(
        self,
        key: str,
        fingerprint: str,
        now: datetime,
        *,
        expired_before: datetime,
        abandoned_before: datetime,
    ) -> bool:
        """Makes an expired row, or one in flight since before ``abandoned_before`` (its process died),
        this request's; False when another request took it first."""
        k = idempotency_keys.c
        stale = sa.or_(
            k.created_at < expired_before, sa.and_(k.status.is_(None), k.created_at < abandoned_before)
        )
        result = await self._conn.execute(
            idempotency_keys.update()
            .where(self._mine(key), stale)
            .values(fingerprint=fingerprint, status=None, content_type=None, body=None, created_at=now)
        )
        return result.rowcount == 1
