"""The dashboard's live streams count against their organization's stream cap, as the API's do.

A log tail or a run's live view open in a browser holds a connection and a share of every wake-up of its
feed, exactly like ``GET /v1/logs/stream``; without a slot of its own, an organization's dashboard tabs
would escape the cap (``TOO_MANY_STREAMS``) that keeps one organization from taking the process from the
others. The page over the limit gets the dashboard's error page (429) and works without its live part.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Protocol

from fastapi import Depends

from threadline.config import Settings
from threadline.dashboard.web import SignInRequired, ViewerDep
from threadline.kit.db import Database
from threadline.kit.deps import get_services
from threadline.kit.streamslots import StreamSlots
from threadline.organizations.repository import OrganizationRepository


class StreamServices(Protocol):
    settings: Settings
    db: Database
    stream_slots: StreamSlots


async def hold_stream_slot(
    viewer: ViewerDep, services: Annotated[StreamServices, Depends(get_services)]
) -> AsyncIterator[None]:
    """One slot for the whole response, released however the stream ends (request-scoped dependency).
    The limit is read when the stream opens: an operator's change applies to the streams opened after it."""
    async with services.db.transaction(write=False) as conn:
        organization = await OrganizationRepository(conn).get(viewer.organization_id)
    if organization is None:  # pragma: no cover - a session's organization is never deleted under it
        raise SignInRequired
    with services.stream_slots.hold(viewer.organization_id, organization.limits(services.settings).streams):
        yield


# Declared by each live endpoint of the dashboard, before the dependencies that open a transaction.
DashboardStreamSlot = Annotated[None, Depends(hold_stream_slot, scope="request")]
