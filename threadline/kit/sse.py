"""Server-Sent Events, written one way for every stream (log tails now, run streams next).

A frame is ``id: <cursor>`` and one ``data: <json>`` line, the JSON repeating the cursor, so a client that
reconnects with ``?cursor=`` or the ``Last-Event-ID`` header a browser sends resumes strictly after the
last frame it processed. ``: ping`` comments keep idle connections from being cut by proxies, and a
stream that ends says ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterable, Mapping
from typing import Any

from starlette.responses import StreamingResponse

from threadline.kit.waiting import wait_event

HEARTBEAT_SECONDS = 15.0
PING = b": ping\n\n"
DONE = b"data: [DONE]\n\n"


class Heartbeat:
    """When a quiet stream owes its client a ``: ping``: ``every`` seconds after the last thing sent, by
    the clock and not by wake-ups (a stream woken often for others' frames must still show it is alive).
    Every live stream (log tails, run feeds) waits through one."""

    __slots__ = ("_every", "_last")

    def __init__(self, every: float = HEARTBEAT_SECONDS) -> None:
        self._every = every
        self._last = time.monotonic()

    def sent(self) -> None:
        self._last = time.monotonic()

    async def wait(self, woken: asyncio.Event) -> bool:
        """Waits for ``woken`` at most until a heartbeat is due; True when one is due (counted as sent)."""
        await wait_event(woken, max(0.0, self._last + self._every - time.monotonic()))
        if time.monotonic() - self._last < self._every:
            return False
        self._last = time.monotonic()
        return True


def frame(cursor: str, payload: Mapping[str, Any]) -> bytes:
    # ASCII only: a raw U+2028 or U+0085 inside the JSON would end the line for readers that split lines
    # the way str.splitlines does (httpx's iter_lines among them).
    data = json.dumps({**payload, "cursor": cursor}, separators=(",", ":"))
    return f"id: {cursor}\ndata: {data}\n\n".encode()


def position(cursor: str) -> bytes:
    """A frame with an id and no data: it sets the client's resume position without being an event."""
    return f"id: {cursor}\n\n".encode()


def named(event: str, data: str, cursor: str) -> bytes:
    """A frame of a named event whose data may span lines (an HTML fragment for htmx's SSE extension).
    ``id:`` comes last, so a frame cut short never moves the client's resume position. ``data`` must not
    hold a carriage return: SSE cannot carry one (escape it as the format requires, e.g. ``&#13;``)."""
    if "\r" in data:
        raise ValueError("SSE data cannot hold a carriage return")
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"event: {event}\n{lines}id: {cursor}\n\n".encode()


def resume_cursor(query_cursor: str | None, last_event_id: str | None) -> str | None:
    """``?cursor=`` wins over ``Last-Event-ID``: a client that names a position means it."""
    return query_cursor or last_event_id or None


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"

    def __init__(self, frames: AsyncIterable[bytes]) -> None:
        super().__init__(
            frames,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
