"""Housekeeping keeps a webhook event and its attempts 30 days, then deletes them (the clock is moved)."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.support import Tenant
from tests.webhooks.helpers import deliveries, register, settled
from tests.webhooks.receiver import Receiver
from threadline.kit.clock import ManualClock
from threadline.runtime import Services
from threadline.webhooks.sweeper import KEPT, WebhookSweeper


async def test_events_older_than_30_days_go_with_their_attempts(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, services: Services, clock: ManualClock
) -> None:
    hook = await register(client, tenant, receiver.url + f"/swept-{tenant.org_id}", events=["*"])
    await client.post(f"/v1/webhooks/{hook['id']}/test", headers=tenant.secret)
    await settled(client, tenant, hook["id"], 1)
    sweeper = WebhookSweeper(services.db, clock)
    clock.advance((KEPT - timedelta(minutes=1)).total_seconds())
    await sweeper.run_once()  # other tests' older events may go: this one stays
    assert len(await deliveries(client, tenant, hook["id"])) == 1
    clock.advance(timedelta(minutes=2).total_seconds())
    assert await sweeper.run_once() >= 1
    assert await deliveries(client, tenant, hook["id"]) == []
