"""Settings > Webhooks (``/settings/webhooks``): the organization's endpoints, registering one (its secret
shown on the answer to that form only, never again), an endpoint's deliveries with their status, response
code and next attempt, "Resend" and "Send test event", and deleting one.

The secret is rendered straight into the answer to the POST that made it (not a redirect: a URL would
keep it in the history); every other change answers with a redirect (POST, then GET)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from threadline.dashboard.forms import FieldErrors, error_of, validate
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import ApiError
from threadline.kit.pagination import CursorParams
from threadline.kit.signals import SignalBus
from threadline.webhooks import service
from threadline.webhooks.schemas import WebhookCreate

PATH = "/settings/webhooks"
EVENTS = ("run.completed", "run.failed", "run.cancelled", "run.requires_action")
_FIELDS = {"url": "url", "events": "events", "description": "description"}
_FIRST = CursorParams(limit=20, after_id=None)


class WebhookPageServices(Protocol):
    clock: Clock
    db: Database
    egress: EgressPolicy
    secret_box: SecretBox | None
    signals: SignalBus


ServicesDep = Annotated[WebhookPageServices, Depends(get_services)]

router = APIRouter()


@dataclass
class AddForm:
    url: str = ""
    events: list[str] = field(default_factory=lambda: ["*"])
    description: str = ""
    errors: FieldErrors = field(default_factory=dict)


@router.get(PATH)
async def webhooks_page(request: Request, viewer: ViewerDep, conn: ConnDep, page: CursorDep) -> Response:
    endpoints, next_cursor = await service.list_webhooks(conn, viewer.organization_id, page)
    return render(
        request, "webhooks/index.html", viewer, endpoints=endpoints, next_cursor=next_cursor,
        paged=page.after_id is not None, created=None, secret=None, form=AddForm(), all_events=EVENTS,
    )  # fmt: skip


@router.post(PATH)
async def add_webhook(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    url: Annotated[str, Form(max_length=10_000)] = "",
    events: Annotated[list[str] | None, Form(max_length=40)] = None,
    description: Annotated[str, Form(max_length=10_000)] = "",
) -> Response:
    chosen = events or []
    form = AddForm(url=url, events=chosen, description=description)
    created = secret = None
    body = {"url": url, "events": chosen, "description": description or None}
    checked = validate(WebhookCreate, body, _FIELDS)
    if isinstance(checked, dict):
        form.errors = checked
    else:
        try:
            async with services.db.transaction(write=True) as conn:
                created, secret = await service.create_webhook(
                    conn, viewer.organization_id, checked, now=services.clock.now(), policy=services.egress,
                    box=services.secret_box,
                )  # fmt: skip
        except ApiError as exc:  # the egress rules, or no key to seal with
            form.errors["url" if exc.status == 400 else ""] = error_of(exc)
        else:
            form = AddForm()
    async with services.db.transaction(write=False) as conn:
        endpoints, next_cursor = await service.list_webhooks(conn, viewer.organization_id, _FIRST)
    return render(
        request, "webhooks/index.html", viewer, status_code=201 if created else 400, endpoints=endpoints,
        next_cursor=next_cursor, paged=False, created=created, secret=secret, form=form, all_events=EVENTS,
    )  # fmt: skip


@router.get(PATH + "/{webhook_id}")
async def webhook_page(
    request: Request, webhook_id: str, viewer: ViewerDep, conn: ConnDep, page: CursorDep
) -> Response:
    endpoint = await service.get_webhook(conn, viewer.organization_id, webhook_id)
    deliveries, next_cursor = await service.list_deliveries(conn, viewer.organization_id, webhook_id, page)
    return render(
        request, "webhooks/detail.html", viewer, endpoint=endpoint, deliveries=deliveries,
        next_cursor=next_cursor, paged=page.after_id is not None,
    )  # fmt: skip


@router.post(PATH + "/{webhook_id}/test")
async def send_test(webhook_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    async with services.db.transaction(write=True) as conn:
        await service.send_test(
            conn, services.signals, viewer.organization_id, webhook_id, now=services.clock.now()
        )
    return RedirectResponse(f"{PATH}/{webhook_id}", status_code=303)


@router.post(PATH + "/{webhook_id}/deliveries/{delivery_id}/resend")
async def resend(webhook_id: str, delivery_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    async with services.db.transaction(write=True) as conn:
        await service.resend(
            conn, services.signals, viewer.organization_id, webhook_id, delivery_id, now=services.clock.now()
        )
    return RedirectResponse(f"{PATH}/{webhook_id}", status_code=303)


@router.post(PATH + "/{webhook_id}/delete")
async def delete_webhook(webhook_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    async with services.db.transaction(write=True) as conn:
        await service.delete_webhook(conn, viewer.organization_id, webhook_id)
    return RedirectResponse(PATH, status_code=303)
