"""From the runs' outbox to webhook deliveries: each fact becomes an event of its organization and a
first attempt for every endpoint that wants it, in the transaction that deletes the fact, so a fact is
fanned out exactly once whichever process (or how many) does it."""

from __future__ import annotations

from collections.abc import Sequence

from threadline.kit.db import Conn
from threadline.runs.outbox import OutboxAcrossOrganizations
from threadline.webhooks.repository import Endpoint, WebhookRepository
from threadline.webhooks.service import event_body, first_attempt

BATCH = 200


async def fan_out(conn: Conn) -> int:
    """One batch; the number of facts taken (``BATCH``: there may be more)."""
    outbox = OutboxAcrossOrganizations(conn)
    entries = await outbox.take(BATCH)
    endpoints: dict[str, Sequence[Endpoint]] = {}
    for entry in entries:
        repository = WebhookRepository(conn, entry.organization_id)
        if entry.organization_id not in endpoints:
            endpoints[entry.organization_id] = await repository.all()
        wanting = [e for e in endpoints[entry.organization_id] if e.wants(entry.type)]
        if not wanting:
            continue
        body = event_body(entry.type, entry.created_at, entry.data)
        await repository.insert_event(entry.id, entry.type, body, entry.created_at)
        for endpoint in wanting:
            await repository.insert_delivery(first_attempt(endpoint, entry.id, entry.type, entry.created_at))
    await outbox.delete([entry.id for entry in entries])
    return len(entries)
