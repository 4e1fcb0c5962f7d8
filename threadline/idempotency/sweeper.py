"""The housekeeping chore's sweep of idempotency keys past their 24 hours (``threadline.chores``): an
expired row is already replaced by the next request with its key, so this only keeps the table to the
keys still kept."""

from __future__ import annotations

import logging

from threadline.idempotency.middleware import KEPT
from threadline.idempotency.tables import idempotency_keys
from threadline.kit.clock import Clock
from threadline.kit.db import Database

log = logging.getLogger(__name__)


class IdempotencySweeper:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def run_once(self) -> int:
        """Across organizations on purpose: expiry is the same for all, and no tenant asks for it."""
        cutoff = self._clock.now() - KEPT
        async with self._db.transaction() as conn:
            result = await conn.execute(
                idempotency_keys.delete().where(idempotency_keys.c.created_at < cutoff)
            )
        if result.rowcount:
            log.info("idempotency keys: swept %d expired", result.rowcount)
        return int(result.rowcount)
