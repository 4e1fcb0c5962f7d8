"""Open streams per organization in this process, and the cap on them (``TOO_MANY_STREAMS``).

Every open stream (a live tail, a run or thread stream) holds a connection, memory and a share of each
wake-up of its feed, so one organization opening thousands of them would take the process from every
other one. Each organization may hold up to its limit at once (``organizations.stream_limit``, else
``THREADLINE_DEFAULT_STREAM_LIMIT``); the stream over it is refused before it starts. The count is per
process: behind a load balancer, an organization may hold its limit on each API process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadline.kit.errors import Reason, TooManyRequests
from threadline.kit.metrics import OPEN_STREAMS

# A refused client has nothing to wait for but one of its own streams to end; this is a fair pause.
RETRY_AFTER_SECONDS = 5


class StreamSlots:
    """Counts run on the event loop without awaiting, so a take is atomic."""

    def __init__(self) -> None:
        self._held: dict[str, int] = {}

    def held(self, organization_id: str) -> int:
        return self._held.get(organization_id, 0)

    @contextmanager
    def hold(self, organization_id: str, limit: int) -> Iterator[None]:
        """One slot for as long as the block runs (the stream's whole response); 429 when none is free."""
        held = self._held.get(organization_id, 0)
        if held >= limit:
            raise TooManyRequests(
                RETRY_AFTER_SECONDS,
                message=f"This organization already holds {held} open streams, its limit; "
                "close one before opening another.",
                reason=Reason.TOO_MANY_STREAMS,
            )
        self._held[organization_id] = held + 1
        OPEN_STREAMS.inc()
        try:
            yield
        finally:
            OPEN_STREAMS.dec()
            remaining = self._held[organization_id] - 1
            if remaining:
                self._held[organization_id] = remaining
            else:
                del self._held[organization_id]
