"""Webhooks: endpoints that receive a run's end (and a wait for the customer) signed per the Standard
Webhooks specification. Verifying a delivery is the specification's own library's job
(``standardwebhooks``; see the README's recipe), so this client ships no verifier of its own."""

from __future__ import annotations

from collections.abc import Sequence

from threadline_client._core import NOT_GIVEN, Call, NotGiven, given
from threadline_client._endpoints import Resource, Tr, listing, operation
from threadline_client._models import ThreadlineModel


class Webhook(ThreadlineModel):
    id: str
    url: str
    events: list[str]
    description: str | None
    created_at: str
    updated_at: str


class WebhookCreated(Webhook):
    """The answer to ``create``, the only one with the ``secret`` (``whsec_…``)."""

    secret: str


class WebhookDelivery(ThreadlineModel):
    """One attempt: ``status`` pending, succeeded or failed; ``next_attempt_at``: when it is (re)tried."""

    id: str
    event_id: str
    event_type: str
    attempt: int
    status: str
    response_status: int | None
    error: str | None
    created_at: str
    next_attempt_at: str | None


class Webhooks(Resource[Tr]):
    """``events``: ``run.completed``, ``run.failed``, ``run.cancelled``, ``run.requires_action`` or ``*``.
    A URL that is not public is refused (``EGRESS_NOT_ALLOWED``) unless the operator allows it."""

    @operation("webhooks.create")
    def create(
        self, *, url: str, events: Sequence[str], description: str | NotGiven = NOT_GIVEN
    ) -> Call[WebhookCreated]:
        """The answer's ``secret`` is shown this once: keep it to verify deliveries."""
        body = given(url=url, events=list(events), description=description)
        return Call("POST", "/webhooks", WebhookCreated.model_validate, json=body)

    @listing("webhooks.list")
    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Call[Webhook]:
        """Newest first."""
        return Call("GET", "/webhooks", Webhook.model_validate, {"limit": limit, "cursor": cursor})

    @operation("webhooks.get")
    def get(self, webhook_id: str) -> Call[Webhook]:
        return Call("GET", f"/webhooks/{webhook_id}", Webhook.model_validate)

    @operation("webhooks.update")
    def update(
        self,
        webhook_id: str,
        *,
        url: str | NotGiven = NOT_GIVEN,
        events: Sequence[str] | NotGiven = NOT_GIVEN,
        description: str | NotGiven | None = NOT_GIVEN,
    ) -> Call[Webhook]:
        """The fields given are replaced (``description=None`` clears it); the secret never changes."""
        listed = list(events) if not isinstance(events, NotGiven) else NOT_GIVEN
        body = given(url=url, events=listed, description=description)
        return Call("PATCH", f"/webhooks/{webhook_id}", Webhook.model_validate, json=body)

    @operation("webhooks.delete")
    def delete(self, webhook_id: str) -> Call[Webhook]:
        return Call("DELETE", f"/webhooks/{webhook_id}", Webhook.model_validate)

    @listing("webhooks.listDeliveries")
    def deliveries(
        self, webhook_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Call[WebhookDelivery]:
        """One entry per attempt, newest first."""
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", f"/webhooks/{webhook_id}/deliveries", WebhookDelivery.model_validate, params)

    @operation("webhooks.test")
    def test(self, webhook_id: str) -> Call[WebhookDelivery]:
        """Queues a ``webhook.test`` event for this endpoint; its first attempt, still pending."""
        return Call("POST", f"/webhooks/{webhook_id}/test", WebhookDelivery.model_validate)
