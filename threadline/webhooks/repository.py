"""Webhook rows: endpoints and deliveries scoped to one organization when the repository is made, and the
dispatcher's queries across organizations (``DeliveriesAcrossOrganizations``: due attempts of every
tenant, claimed one by one)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.webhooks.tables import webhook_deliveries, webhook_endpoints, webhook_events


@dataclass(frozen=True, slots=True)
class Endpoint:
    id: str
    organization_id: str
    url: str
    events: list[str]
    description: str | None
    secret_sealed: str
    created_at: datetime
    updated_at: datetime

    def wants(self, event_type: str) -> bool:
        return "*" in self.events or event_type in self.events


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    organization_id: str
    webhook_id: str
    event_id: str
    event_type: str
    attempt: int
    status: str
    response_status: int | None
    error: str | None
    created_at: datetime
    next_attempt_at: datetime | None


@dataclass(frozen=True, slots=True)
class Attempt:
    """A due delivery with what sending it needs: the endpoint's URL and sealed secret, the event's body."""

    delivery: Delivery
    url: str
    secret_sealed: str
    body: str
    event_created_at: datetime


def _endpoint(row: sa.RowMapping) -> Endpoint:
    return Endpoint(
        id=row["id"],
        organization_id=row["organization_id"],
        url=row["url"],
        events=list(row["events"]),
        description=row["description"],
        secret_sealed=row["secret_sealed"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


_DELIVERY_COLUMNS = [c for c in webhook_deliveries.c if c.name != "claimed_until"]


def _delivery(row: sa.RowMapping) -> Delivery:
    return Delivery(**{c.name: row[c.name] for c in _DELIVERY_COLUMNS})


class WebhookRepository:
    """The webhook endpoints, events and deliveries of one organization."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    def _mine(self, webhook_id: str) -> sa.ColumnElement[bool]:
        return sa.and_(
            webhook_endpoints.c.id == webhook_id, webhook_endpoints.c.organization_id == self._organization_id
        )

    async def insert(self, endpoint: Endpoint) -> None:
        values = {c.name: getattr(endpoint, c.name) for c in webhook_endpoints.c}
        await self._conn.execute(
            webhook_endpoints.insert().values(values | {"organization_id": self._organization_id})
        )

    async def get(self, webhook_id: str) -> Endpoint | None:
        row = (
            (await self._conn.execute(sa.select(webhook_endpoints).where(self._mine(webhook_id))))
            .mappings()
            .first()
        )
        return _endpoint(row) if row else None

    async def all(self) -> Sequence[Endpoint]:
        query = sa.select(webhook_endpoints).where(
            webhook_endpoints.c.organization_id == self._organization_id
        )
        return [_endpoint(row) for row in (await self._conn.execute(query)).mappings()]

    async def page(self, params: CursorParams) -> tuple[Sequence[Endpoint], str | None]:
        query = sa.select(webhook_endpoints).where(
            webhook_endpoints.c.organization_id == self._organization_id
        )
        rows, next_cursor = await fetch_cursor_page(self._conn, query, webhook_endpoints.c.id, params)
        return [_endpoint(row._mapping) for row in rows], next_cursor

    async def save(self, endpoint: Endpoint) -> None:
        values = {
            "url": endpoint.url,
            "events": endpoint.events,
            "description": endpoint.description,
            "updated_at": endpoint.updated_at,
        }
        await self._conn.execute(webhook_endpoints.update().where(self._mine(endpoint.id)).values(values))

    async def delete(self, webhook_id: str) -> None:
        await self._conn.execute(webhook_endpoints.delete().where(self._mine(webhook_id)))

    async def insert_event(self, event_id: str, type_: str, body: str, at: datetime) -> None:
        await self._conn.execute(
            webhook_events.insert().values(
                id=event_id, organization_id=self._organization_id, type=type_, body=body, created_at=at
            )
        )

    async def insert_delivery(self, delivery: Delivery) -> None:
        values = {c.name: getattr(delivery, c.name) for c in _DELIVERY_COLUMNS}
        await self._conn.execute(
            webhook_deliveries.insert().values(values | {"organization_id": self._organization_id})
        )

    async def deliveries(
        self, webhook_id: str, params: CursorParams
    ) -> tuple[Sequence[Delivery], str | None]:
        query = sa.select(*_DELIVERY_COLUMNS).where(
            webhook_deliveries.c.webhook_id == webhook_id,
            webhook_deliveries.c.organization_id == self._organization_id,
        )
        rows, next_cursor = await fetch_cursor_page(self._conn, query, webhook_deliveries.c.id, params)
        return [_delivery(row._mapping) for row in rows], next_cursor

    async def delivery(self, delivery_id: str) -> Delivery | None:
        query = sa.select(*_DELIVERY_COLUMNS).where(
            webhook_deliveries.c.id == delivery_id,
            webhook_deliveries.c.organization_id == self._organization_id,
        )
        row = (await self._conn.execute(query)).mappings().first()
        return _delivery(row) if row else None


class DeliveriesAcrossOrganizations:
    """The dispatcher's view: due attempts of every organization. A claim is a conditional update (the row
    is still pending and unclaimed, or its claim lapsed), so dispatchers in several processes never send
    one attempt at once, and a dispatcher that died mid-send leaves an attempt another takes up later."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def due(self, now: datetime, limit: int, busy: Sequence[str]) -> Sequence[tuple[str, str]]:
        """Ids of pending attempts due by ``now`` and not claimed, oldest first, with their endpoints',
        skipping ``busy`` endpoints (this process sends to them as much as it may)."""
        d = webhook_deliveries.c
        query = (
            sa.select(d.id, d.webhook_id)
            .where(
                d.status == "pending",
                d.next_attempt_at <= now,
                sa.or_(d.claimed_until.is_(None), d.claimed_until <= now),
            )
            .order_by(d.next_attempt_at, d.id)
            .limit(limit)
        )
        if busy:
            query = query.where(d.webhook_id.not_in(list(busy)))
        return [(row.id, row.webhook_id) for row in await self._conn.execute(query)]

    async def claim(self, delivery_id: str, now: datetime, until: datetime) -> Attempt | None:
        d = webhook_deliveries.c
        claimed = await self._conn.execute(
            webhook_deliveries.update()
            .where(
                d.id == delivery_id,
                d.status == "pending",
                sa.or_(d.claimed_until.is_(None), d.claimed_until <= now),
            )
            .values(claimed_until=until)
        )
        if claimed.rowcount != 1:
            return None
        query = (
            sa.select(
                *_DELIVERY_COLUMNS,
                webhook_endpoints.c.url,
                webhook_endpoints.c.secret_sealed,
                webhook_events.c.body,
                webhook_events.c.created_at.label("event_created_at"),
            )
            .join(webhook_endpoints, webhook_endpoints.c.id == d.webhook_id)
            .join(webhook_events, webhook_events.c.id == d.event_id)
            .where(d.id == delivery_id)
        )
        row = (await self._conn.execute(query)).mappings().first()
        if row is None:
            return None
        return Attempt(
            delivery=_delivery(row),
            url=row["url"],
            secret_sealed=row["secret_sealed"],
            body=row["body"],
            event_created_at=row["event_created_at"],
        )

    async def finish(
        self,
        delivery_id: str,
        status: str,
        response_status: int | None,
        error: str | None,
        next_attempt_at: datetime | None,
    ) -> bool:
        """Records an attempt's result; False when the row is gone (its endpoint was deleted meanwhile)."""
        result = await self._conn.execute(
            webhook_deliveries.update()
            .where(webhook_deliveries.c.id == delivery_id, webhook_deliveries.c.status == "pending")
            .values(
                status=status,
                response_status=response_status,
                error=error,
                next_attempt_at=next_attempt_at,
                claimed_until=None,
            )
        )
        return result.rowcount == 1
