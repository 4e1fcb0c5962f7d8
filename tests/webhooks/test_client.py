"""``client.webhooks.*`` against the app, and the README's verify recipe (standardwebhooks) on what the
receiver got: the recipe as users copy it."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from standardwebhooks.webhooks import Webhook as Verifier
from threadline_client import AsyncThreadline

from tests.support import Tenant
from tests.webhooks.receiver import Receiver


async def test_client_webhooks_and_the_verify_recipe(
    app: FastAPI, tenant: Tenant, receiver: Receiver
) -> None:
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
    async with AsyncThreadline(
        tenant.created.secret_value, "http://testserver/v1", http_client=http
    ) as client:
        path = f"/client-{tenant.org_id}"
        created = await client.webhooks.create(url=receiver.url + path, events=["*"], description="docs")
        assert created.secret.startswith("whsec_")
        listed = [w async for w in client.webhooks.list()]
        assert [w.id for w in listed] == [created.id]
        assert "secret" not in listed[0].to_dict()
        updated = await client.webhooks.update(created.id, events=["run.completed"], description=None)
        assert (updated.events, updated.description) == (["run.completed"], None)
        queued = await client.webhooks.test(created.id)
        assert (queued.status, queued.event_type) == ("pending", "webhook.test")
        [received] = await asyncio.to_thread(receiver.wait_for, path)

        # The recipe (README "Webhooks"): the raw body and the headers, verified before anything is trusted.
        event = Verifier(created.secret).verify(received.body, received.headers)
        assert event["type"] == "webhook.test"

        async with asyncio.timeout(15):
            while True:
                delivery = [d async for d in client.webhooks.deliveries(created.id)].pop()
                if delivery.status != "pending":
                    break
                await asyncio.sleep(0.02)
        assert (delivery.status, delivery.response_status) == ("succeeded", 200)
        assert (await client.webhooks.delete(created.id)).id == created.id
