"""Webhook rules: endpoints registered under the egress rules with a secret sealed at rest, and the
events they receive (a run's, fanned out by ``fanout``; a test event; a resend of an event).

An event is recorded once per organization (``webhook_events``, its body fixed then, since the signature
covers it) and a first attempt per endpoint that wants it, due at once; ``dispatcher`` sends them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from threadline.kit.clock import isoformat
from threadline.kit.db import Conn, after_commit
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import NotFound, ServiceUnavailable
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams
from threadline.kit.signals import SignalBus
from threadline.mcp_servers.service import check_egress
from threadline.webhooks import signing
from threadline.webhooks.repository import Delivery, Endpoint, WebhookRepository
from threadline.webhooks.schemas import WebhookCreate

TEST_EVENT = "webhook.test"
# Wakes dispatchers: an attempt is due now (payload: the organization, for logs only).
DELIVERIES_QUEUED = "webhooks.queued"


def _seal(box: SecretBox | None, webhook_id: str, secret: str) -> str:
    if box is None:
        raise ServiceUnavailable(
            "Webhook secrets are stored encrypted and no key is configured: the operator must set "
            "THREADLINE_ENCRYPTION_KEY."
        )
    return box.seal(secret.encode(), associated=webhook_id.encode())


def open_secret(box: SecretBox, webhook_id: str, sealed: str) -> str:
    return box.open(sealed, associated=webhook_id.encode()).decode()


def event_body(type_: str, at: datetime, data_json: str) -> str:
    """``{"type","timestamp","data"}`` with ``data`` spliced in as it was rendered (never re-encoded)."""
    return f'{{"type":{json.dumps(type_)},"timestamp":"{isoformat(at)}","data":{data_json}}}'


async def create_webhook(
    conn: Conn,
    organization_id: str,
    body: WebhookCreate,
    *,
    now: datetime,
    policy: EgressPolicy,
    box: SecretBox | None,
) -> tuple[Endpoint, str]:
    """The endpoint and its secret, in clear this once."""
    await check_egress(policy, body.url)
    webhook_id = new_id("whk")
    secret = signing.new_secret()
    endpoint = Endpoint(
        id=webhook_id,
        organization_id=organization_id,
        url=body.url,
        events=sorted(set(body.events)),
        description=body.description,
        secret_sealed=_seal(box, webhook_id, secret),
        created_at=now,
        updated_at=now,
    )
    await WebhookRepository(conn, organization_id).insert(endpoint)
    return endpoint, secret


async def get_webhook(conn: Conn, organization_id: str, webhook_id: str) -> Endpoint:
    endpoint = await WebhookRepository(conn, organization_id).get(webhook_id)
    if endpoint is None:
        raise NotFound(f"Webhook {webhook_id} was not found.")
    return endpoint


async def list_webhooks(
    conn: Conn, organization_id: str, params: CursorParams
) -> tuple[Sequence[Endpoint], str | None]:
    return await WebhookRepository(conn, organization_id).page(params)


async def update_webhook(
    conn: Conn,
    organization_id: str,
    webhook_id: str,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    policy: EgressPolicy,
) -> Endpoint:
    current = await get_webhook(conn, organization_id, webhook_id)
    if "url" in changes:
        await check_egress(policy, changes["url"])
    updated = replace(
        current,
        url=changes.get("url", current.url),
        events=sorted(set(changes["events"])) if "events" in changes else current.events,
        description=changes.get("description", current.description),
        updated_at=now,
    )
    await WebhookRepository(conn, organization_id).save(updated)
    return updated


async def delete_webhook(conn: Conn, organization_id: str, webhook_id: str) -> Endpoint:
    """Its deliveries go with it: pending attempts are never sent."""
    endpoint = await get_webhook(conn, organization_id, webhook_id)
    await WebhookRepository(conn, organization_id).delete(webhook_id)
    return endpoint


async def list_deliveries(
    conn: Conn, organization_id: str, webhook_id: str, params: CursorParams
) -> tuple[Sequence[Delivery], str | None]:
    await get_webhook(conn, organization_id, webhook_id)
    return await WebhookRepository(conn, organization_id).deliveries(webhook_id, params)


def first_attempt(endpoint: Endpoint, event_id: str, event_type: str, now: datetime) -> Delivery:
    return Delivery(
        id=new_id("whd"),
        organization_id=endpoint.organization_id,
        webhook_id=endpoint.id,
        event_id=event_id,
        event_type=event_type,
        attempt=1,
        status="pending",
        response_status=None,
        error=None,
        created_at=now,
        next_attempt_at=now,
    )


def _wake(conn: Conn, signals: SignalBus, organization_id: str) -> None:
    async def publish() -> None:
        await signals.publish(DELIVERIES_QUEUED, organization_id)

    after_commit(conn, publish)


async def send_test(
    conn: Conn, signals: SignalBus, organization_id: str, webhook_id: str, *, now: datetime
) -> Delivery:
    """A ``webhook.test`` event for this endpoint alone, due now; ``data`` names the endpoint."""
    endpoint = await get_webhook(conn, organization_id, webhook_id)
    repository = WebhookRepository(conn, organization_id)
    event_id = new_id("evt")
    data = json.dumps({"webhookId": endpoint.id}, separators=(",", ":"))
    await repository.insert_event(event_id, TEST_EVENT, event_body(TEST_EVENT, now, data), now)
    delivery = first_attempt(endpoint, event_id, TEST_EVENT, now)
    await repository.insert_delivery(delivery)
    _wake(conn, signals, organization_id)
    return delivery


async def resend(
    conn: Conn, signals: SignalBus, organization_id: str, webhook_id: str, delivery_id: str, *, now: datetime
) -> Delivery:
    """The event of ``delivery_id`` again, as a new first attempt due now (same event id, same body: a
    receiver that deduplicates by ``webhook-id`` sees the same message)."""
    endpoint = await get_webhook(conn, organization_id, webhook_id)
    repository = WebhookRepository(conn, organization_id)
    previous = await repository.delivery(delivery_id)
    if previous is None or previous.webhook_id != webhook_id:
        raise NotFound(f"Delivery {delivery_id} was not found.")
    delivery = first_attempt(endpoint, previous.event_id, previous.event_type, now)
    await repository.insert_delivery(delivery)
    _wake(conn, signals, organization_id)
    return delivery
