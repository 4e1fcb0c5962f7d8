"""Webhook bodies. The secret goes out once, in the answer to the create, and never again."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from threadline.kit.schemas import RequestModel, ResponseModel, Timestamp
from threadline.mcp_servers.schemas import Url
from threadline.webhooks.repository import Delivery, Endpoint

EventType = Literal["run.completed", "run.failed", "run.cancelled", "run.requires_action", "*"]
Events = Annotated[list[EventType], Field(min_length=1, max_length=5)]
Description = Annotated[str, StringConstraints(max_length=500)]


class WebhookCreate(RequestModel):
    url: Url
    events: Events = Field(description="The event types sent to this endpoint; `*` for every one.")
    description: Description | None = None


class WebhookUpdate(RequestModel):
    url: Url | None = None
    events: Events | None = None
    description: Description | None = None


class WebhookOut(ResponseModel):
    id: str
    url: str
    events: list[str]
    description: str | None
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, endpoint: Endpoint) -> WebhookOut:
        return cls(
            id=endpoint.id,
            url=endpoint.url,
            events=endpoint.events,
            description=endpoint.description,
            created_at=endpoint.created_at,
            updated_at=endpoint.updated_at,
        )


class WebhookCreated(WebhookOut):
    secret: str = Field(description="`whsec_…`: verifies the signatures; shown only in this answer.")


class DeliveryOut(ResponseModel):
    id: str
    event_id: str
    event_type: str
    attempt: int
    status: Literal["pending", "succeeded", "failed"]
    response_status: int | None
    error: str | None
    created_at: Timestamp
    next_attempt_at: Timestamp | None = Field(
        description="Pending: when it is sent; failed: when it is retried (null: no more attempts)."
    )

    @classmethod
    def of(cls, delivery: Delivery) -> DeliveryOut:
        return cls(
            id=delivery.id,
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            attempt=delivery.attempt,
            status=delivery.status,
            response_status=delivery.response_status,
            error=delivery.error,
            created_at=delivery.created_at,
            next_attempt_at=delivery.next_attempt_at,
        )
