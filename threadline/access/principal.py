"""The caller of a request, as the access middleware authenticated it, and the named dependencies handlers
declare.

It lives below the domains (organizations, keys and every domain that serves requests import it), with the
two values it carries (``caller.ApiKey``, ``caller.Organization``): ``keys`` reads them and builds principals.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request

from threadline.access.caller import ApiKey, Organization
from threadline.kit.streamslots import StreamSlots

# Signals that drop cached principals on every process (the key's hash; the organization's id).
KEY_REVOKED = "key.revoked"
ORG_UPDATED = "org.updated"
PRINCIPAL_SCOPE_KEY = "threadline.principal"


@dataclass(frozen=True, slots=True, eq=False)
class Principal:
    """Immutable, and renewed from the database at least every ``key_cache_ttl_seconds``.

    ``memo`` holds values derived from it (rate-limit buckets, rendered bodies) so the hot path computes
    them once per renewal instead of once per request."""

    key: ApiKey
    organization: Organization
    organization_limit: int
    stream_limit: int  # open streams at once, in this process
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def organization_id(self) -> str:
        return self.organization.id

    @property
    def key_limit(self) -> int:
        own = self.key.rate_limit_per_minute
        return self.organization_limit if own is None else min(own, self.organization_limit)


def principal_of(request: Request) -> Principal:
    """The caller, as the access middleware authenticated it before routing (key type checked too).

    Handlers call this rather than declaring a FastAPI dependency: authentication has already happened,
    and FastAPI charges about 10 µs per sub-dependency per request, which measured as much as
    authentication and rate limiting together on ``GET /v1/me``. The security schemes of each operation
    are declared in the contract (``contract.py``)."""
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(principal, Principal):  # pragma: no cover - the middleware guarantees it
        raise RuntimeError("route reached without authentication")
    return principal


class StreamSlotServices(Protocol):
    stream_slots: StreamSlots


async def hold_stream_slot(request: Request) -> AsyncIterator[None]:
    """One of the caller's organization's stream slots for the whole response, released when the stream
    ends however it ends (finished, client gone, shutdown): FastAPI closes a request-scoped dependency
    only after the response has been sent. Over the limit: 429 ``TOO_MANY_STREAMS``, before any work."""
    principal = principal_of(request)
    services: StreamSlotServices = request.app.state.runtime.services
    with services.stream_slots.hold(principal.organization_id, principal.stream_limit):
        yield


# Declared by each stream endpoint, before its other dependencies (a refused stream opens no transaction).
StreamSlot = Annotated[None, Depends(hold_stream_slot, scope="request")]
