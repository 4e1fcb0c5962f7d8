"""The housekeeping chore's sweep of old webhook events (``threadline.chores``): an event and its attempts
are kept 30 days after it happened (docs/webhooks.md), long past its last retry (about 27.6 h), so the
deliveries page shows a month of history and the tables do not grow without end."""

from __future__ import annotations

import logging
from datetime import timedelta

import sqlalchemy as sa

from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.webhooks.tables import webhook_deliveries, webhook_events

log = logging.getLogger(__name__)

KEPT = timedelta(days=30)


class WebhookSweeper:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def run_once(self) -> int:
        """Across organizations on purpose: the retention is the same for all. Attempts go first (no foreign
        key cascade is relied on: SQLite enforces them only when asked)."""
        old = sa.select(webhook_events.c.id).where(webhook_events.c.created_at < self._clock.now() - KEPT)
        async with self._db.transaction() as conn:
            await conn.execute(webhook_deliveries.delete().where(webhook_deliveries.c.event_id.in_(old)))
            result = await conn.execute(webhook_events.delete().where(webhook_events.c.id.in_(old)))
        if result.rowcount:
            log.info("webhook events: swept %d older than %s", result.rowcount, KEPT)
        return int(result.rowcount)
