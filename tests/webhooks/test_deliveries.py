"""Deliveries to a real HTTP receiver, each verified with the Standard Webhooks specification's own library:
a run's end, test events, retries on the schedule (the clock is moved, never waited on), resends, and one
organization's hanging endpoint beside another's."""

from __future__ import annotations

import asyncio
import json
import time

import httpx

from tests.runs.helpers import start_run, wait_for_status
from tests.support import Tenant, make_thread
from tests.webhooks.helpers import deliveries, register, settled
from tests.webhooks.receiver import Receiver, verified
from threadline.kit.clock import ManualClock
from threadline.kit.metrics import REGISTRY
from threadline.runtime import Services
from threadline.webhooks.dispatcher import BACKOFF_SECONDS, PER_ENDPOINT, retry_after


async def test_a_run_end_is_delivered_signed(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, services: Services
) -> None:
    path = f"/end-{tenant.org_id}"
    hook = await register(client, tenant, receiver.url + path, events=["run.completed", "run.cancelled"])
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input="#notools hello")
    ended = await wait_for_status(client, tenant, run["id"], "completed")
    [received] = await asyncio.to_thread(receiver.wait_for, path)
    payload = verified(hook["secret"], received)
    assert payload["type"] == "run.completed"
    assert payload["data"] == ended
    assert payload["timestamp"].endswith("Z")
    assert received.headers["webhook-id"].startswith("evt_")
    [delivery] = await settled(client, tenant, hook["id"], 1)
    assert delivery["eventId"] == received.headers["webhook-id"]
    assert (delivery["eventType"], delivery["attempt"], delivery["status"]) == (
        "run.completed",
        1,
        "succeeded",
    )
    assert (delivery["responseStatus"], delivery["error"], delivery["nextAttemptAt"]) == (200, None, None)


async def test_events_not_subscribed_are_not_sent(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver
) -> None:
    path = f"/failed-only-{tenant.org_id}"
    hook = await register(client, tenant, receiver.url + path, events=["run.failed"])
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input="#notools hello")
    await wait_for_status(client, tenant, run["id"], "completed")
    response = await client.post(f"/v1/webhooks/{hook['id']}/test", headers=tenant.secret)
    assert response.status_code == 202, response.text
    [received] = await asyncio.to_thread(receiver.wait_for, path)  # the test event, sent after the run's
    assert verified(hook["secret"], received)["type"] == "webhook.test"
    assert len(receiver.at(path)) == 1


def _delivered(result: str) -> float:
    """``threadline_webhook_deliveries_total`` of one result, as /metrics would show it."""
    return REGISTRY.get_sample_value("threadline_webhook_deliveries_total", {"result": result}) or 0.0


async def test_test_event_and_retries_until_success(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, services: Services, clock: ManualClock
) -> None:
    path = f"/flaky-{tenant.org_id}"
    receiver.statuses[path] = [500, 503]
    before = {
        r: (REGISTRY.get_sample_value("threadline_webhook_deliveries_total", {"result": r}) or 0.0)
        for r in ("succeeded", "failed")
    }
    hook = await register(client, tenant, receiver.url + path, events=["*"])
    response = await client.post(f"/v1/webhooks/{hook['id']}/test", headers=tenant.secret)
    assert response.status_code == 202, response.text
    assert (response.json()["status"], response.json()["attempt"]) == ("pending", 1)
    found = await settled(client, tenant, hook["id"], 1)
    failed = found[1]
    assert (failed["status"], failed["responseStatus"], failed["error"]) == ("failed", 500, "HTTP 500")
    waited = (clock.now() - _parse(failed["createdAt"])).total_seconds()
    assert failed["nextAttemptAt"] == found[0]["nextAttemptAt"]
    assert (_parse(failed["nextAttemptAt"]) - _parse(failed["createdAt"])).total_seconds() <= 10 + waited
    assert found[0]["status"] == "pending" and found[0]["attempt"] == 2
    clock.advance(BACKOFF_SECONDS[0])
    assert services.webhooks is not None
    services.webhooks.wake()
    await settled(client, tenant, hook["id"], 2)
    clock.advance(BACKOFF_SECONDS[1])
    services.webhooks.wake()
    found = await settled(client, tenant, hook["id"], 3)
    assert [(d["attempt"], d["status"], d["responseStatus"]) for d in found] == [
        (3, "succeeded", 200), (2, "failed", 503), (1, "failed", 500),
    ]  # fmt: skip
    sent = receiver.at(path)
    assert len({r.headers["webhook-id"] for r in sent}) == 1  # one event, the same id on every retry
    # threadline_webhook_deliveries_total by result (other tests' retries may be due as the clock moves)
    assert (
        REGISTRY.get_sample_value("threadline_webhook_deliveries_total", {"result": "failed"}) or 0.0
    ) - before["failed"] >= 2
    assert (
        REGISTRY.get_sample_value("threadline_webhook_deliveries_total", {"result": "succeeded"}) or 0.0
    ) - before["succeeded"] >= 1
    assert all(verified(hook["secret"], r)["data"] == {"webhookId": hook["id"]} for r in sent)


async def test_retries_last_at_least_a_day_then_stop(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, services: Services, clock: ManualClock
) -> None:
    assert retry_after(1) is not None and retry_after(1) <= 10
    assert sum(BACKOFF_SECONDS) >= 24 * 3600
    path = f"/dead-{tenant.org_id}"
    receiver.statuses[path] = [500] * (len(BACKOFF_SECONDS) + 1)
    hook = await register(client, tenant, receiver.url + path, events=["*"])
    await client.post(f"/v1/webhooks/{hook['id']}/test", headers=tenant.secret)
    assert services.webhooks is not None
    for attempt, wait in enumerate(BACKOFF_SECONDS, start=1):
        await settled(client, tenant, hook["id"], attempt)
        clock.advance(wait)
        services.webhooks.wake()
    found = await settled(client, tenant, hook["id"], len(BACKOFF_SECONDS) + 1)
    last = found[0]
    assert (last["attempt"], last["status"], last["nextAttemptAt"]) == (
        len(BACKOFF_SECONDS) + 1,
        "failed",
        None,
    )
    assert len(receiver.at(path)) == len(BACKOFF_SECONDS) + 1


async def test_resend_sends_the_event_again(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, services: Services
) -> None:
    from threadline.webhooks import service

    path = f"/resend-{tenant.org_id}"
    hook = await register(client, tenant, receiver.url + path, events=["*"])
    await client.post(f"/v1/webhooks/{hook['id']}/test", headers=tenant.secret)
    [first] = await settled(client, tenant, hook["id"], 1)
    async with services.db.transaction() as conn:
        await service.resend(
            conn, services.signals, tenant.org_id, hook["id"], first["id"], now=services.clock.now()
        )
    sent = await asyncio.to_thread(receiver.wait_for, path, 2)
    assert sent[0].body == sent[1].body and sent[0].headers["webhook-id"] == sent[1].headers["webhook-id"]
    assert len(await deliveries(client, tenant, hook["id"])) == 2


async def test_a_hanging_endpoint_never_delays_another_organization(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, receiver: Receiver
) -> None:
    slow, fast = f"/hang-{tenant.org_id}", f"/quick-{other_tenant.org_id}"
    receiver.hang[slow] = 3.0
    slow_hook = await register(client, tenant, receiver.url + slow, events=["*"])
    fast_hook = await register(client, other_tenant, receiver.url + fast, events=["*"])
    for _ in range(PER_ENDPOINT + 2):
        await client.post(f"/v1/webhooks/{slow_hook['id']}/test", headers=tenant.secret)
    await asyncio.to_thread(receiver.wait_for, slow, PER_ENDPOINT)
    started = time.monotonic()
    await client.post(f"/v1/webhooks/{fast_hook['id']}/test", headers=other_tenant.secret)
    [received] = await asyncio.to_thread(receiver.wait_for, fast)
    assert received.at - started < 1.0
    assert len(receiver.at(slow)) == PER_ENDPOINT  # per-endpoint concurrency: the rest wait their turn
    assert json.loads(received.body)["type"] == "webhook.test"


def _parse(value: str):  # type: ignore[no-untyped-def]
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_a_run_waiting_for_its_caller_is_delivered(
    client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver
) -> None:
    path = f"/waiting-{tenant.org_id}"
    hook = await register(client, tenant, receiver.url + path, events=["run.requires_action"])
    thread = await make_thread(client, tenant)
    tool = {"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}
    run = await start_run(client, tenant, thread, tools=[tool], input='#call=lookup_order {"id": 7}')
    waiting = await wait_for_status(client, tenant, run["id"], "requires_action")
    received = (await asyncio.to_thread(receiver.wait_for, path))[0]  # at least once: the first suffices
    payload = verified(hook["secret"], received)
    assert payload["type"] == "run.requires_action"
    assert payload["data"]["id"] == run["id"] and payload["data"]["status"] == "requires_action"
    assert payload["data"]["requiredAction"] == waiting["requiredAction"]
