"""Webhooks over HTTP."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.kit.signals import SignalBus
from threadline.webhooks import service
from threadline.webhooks.schemas import DeliveryOut, WebhookCreate, WebhookCreated, WebhookOut, WebhookUpdate


class WebhookServices(Protocol):
    """What the webhook handlers read from the process's services."""

    clock: Clock
    egress: EgressPolicy
    secret_box: SecretBox | None
    signals: SignalBus


ServicesDep = Annotated[WebhookServices, Depends(get_services)]

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


@router.get(
    "",
    operation_id="webhooks.list",
    response_model=CursorPage[WebhookOut],
    responses=errors(400, *AUTHENTICATED),
)
async def list_webhooks(request: Request, conn: ConnDep, page: CursorDep) -> CursorPage[WebhookOut]:
    """The organization's webhook endpoints, newest first."""
    found, next_cursor = await service.list_webhooks(conn, principal_of(request).organization_id, page)
    return CursorPage(data=[WebhookOut.of(e) for e in found], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="webhooks.create",
    status_code=201,
    response_model=WebhookCreated,
    responses=errors(400, 413, 503, *AUTHENTICATED),
)
async def create_webhook(
    body: WebhookCreate, request: Request, conn: ConnDep, services: ServicesDep
) -> WebhookCreated:
    """Registers an endpoint. Its `secret` (`whsec_…`) is in this answer only: keep it to verify the
    signatures. A URL whose host is, or resolves to, a non-public address is refused (400
    `EGRESS_NOT_ALLOWED`) unless the operator allows it."""
    endpoint, secret = await service.create_webhook(
        conn,
        principal_of(request).organization_id,
        body,
        now=services.clock.now(),
        policy=services.egress,
        box=services.secret_box,
    )
    return WebhookCreated(**WebhookOut.of(endpoint).model_dump(), secret=secret)


@router.get(
    "/{webhookId}",
    operation_id="webhooks.get",
    response_model=WebhookOut,
    responses=errors(404, *AUTHENTICATED),
)
async def get_webhook(webhookId: str, request: Request, conn: ConnDep) -> WebhookOut:
    return WebhookOut.of(await service.get_webhook(conn, principal_of(request).organization_id, webhookId))


@router.patch(
    "/{webhookId}",
    operation_id="webhooks.update",
    response_model=WebhookOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def update_webhook(
    webhookId: str, body: WebhookUpdate, request: Request, conn: ConnDep, services: ServicesDep
) -> WebhookOut:
    """Replaces the fields sent (`description: null` clears it). The secret never changes."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    nulls = sorted(name for name in ("url", "events") if name in changes and changes[name] is None)
    if nulls:
        raise BadRequest(f"{', '.join(nulls)} cannot be null.", reason=Reason.VALIDATION_FAILED)
    endpoint = await service.update_webhook(
        conn,
        principal_of(request).organization_id,
        webhookId,
        changes,
        now=services.clock.now(),
        policy=services.egress,
    )
    return WebhookOut.of(endpoint)


@router.delete(
    "/{webhookId}",
    operation_id="webhooks.delete",
    response_model=WebhookOut,
    responses=errors(404, *AUTHENTICATED),
)
async def delete_webhook(webhookId: str, request: Request, conn: ConnDep) -> WebhookOut:
    """Deletes the endpoint with its deliveries; attempts still pending are not sent."""
    return WebhookOut.of(await service.delete_webhook(conn, principal_of(request).organization_id, webhookId))


@router.get(
    "/{webhookId}/deliveries",
    operation_id="webhooks.listDeliveries",
    response_model=CursorPage[DeliveryOut],
    responses=errors(400, 404, *AUTHENTICATED),
)
async def list_deliveries(
    webhookId: str, request: Request, conn: ConnDep, page: CursorDep
) -> CursorPage[DeliveryOut]:
    """One entry per attempt, newest first."""
    found, next_cursor = await service.list_deliveries(
        conn, principal_of(request).organization_id, webhookId, page
    )
    return CursorPage(data=[DeliveryOut.of(d) for d in found], next_cursor=next_cursor)


@router.post(
    "/{webhookId}/test",
    operation_id="webhooks.test",
    status_code=202,
    response_model=DeliveryOut,
    responses=errors(404, *AUTHENTICATED),
)
async def test_webhook(webhookId: str, request: Request, conn: ConnDep, services: ServicesDep) -> DeliveryOut:
    """Queues a `webhook.test` event for this endpoint now (`data`: `{"webhookId"}`); 202 with its first
    attempt, still pending: its result shows in the deliveries."""
    delivery = await service.send_test(
        conn, services.signals, principal_of(request).organization_id, webhookId, now=services.clock.now()
    )
    return DeliveryOut.of(delivery)
