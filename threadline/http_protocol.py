"""uvicorn's HTTP protocol (httptools), with bounds on slow clients.

uvicorn bounds only the idle time between requests (keep-alive). A connection that sends nothing, headers
trickled a byte at a time, or a body that never finishes were held as long as the client liked, each
holding a socket and memory: a handful of clients could exhaust a process's connections. Here:

* the request line and headers must arrive within ``header_timeout_seconds`` of the connection opening or
  of the request's first byte;
* the body within ``body_timeout_seconds`` of the headers;
* a process holds at most ``max_connections`` connections; one more is answered 503 and closed.

A request that runs out of time is answered 408 (if its response has not begun) and its connection closed.
One timer per connection serves both deadlines and is moved rather than recreated, so a keep-alive client
costs no timer per request (the hot path of ``GET /v1/me`` is measured in microseconds).
"""

from __future__ import annotations

import asyncio
from asyncio import TimerHandle
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
_FULL = (
    b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\n"
    b"content-type: text/plain; charset=utf-8\r\ncontent-length: 34\r\n\r\n"
    b"Too many connections; retry later.\n"
)


def bounded_protocol(
    *, header_timeout_seconds: float, body_timeout_seconds: float, max_connections: int
) -> type[HttpToolsProtocol]:
    """The protocol class for uvicorn's ``http`` setting, with these bounds."""

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._limit_at: float | None = None
            self._timer: TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_FULL)
                transport.close()
                return
            self._arm(header_timeout_seconds)

        def connection_lost(self, exc: Exception | None) -> None:
            self._limit_at = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._limit_at is None:
                self._arm(header_timeout_seconds)

        def on_headers_complete(self) -> None:
            self._arm(body_timeout_seconds)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._limit_at = None  # the timer, if pending, finds nothing to do
            super().on_message_complete()

        def _arm(self, seconds: float) -> None:
            self._limit_at = limit = self.loop.time() + seconds
            if self._timer is not None and self._timer.when() > limit:
                self._timer.cancel()
                self._timer = None
            if self._timer is None:
                self._timer = self.loop.call_at(limit, self._expire)

        def _expire(self) -> None:
            self._timer = None
            if self._limit_at is None or self.transport.is_closing():
                return
            if self.loop.time() < self._limit_at:  # the deadline moved on: wait for it
                self._timer = self.loop.call_at(self._limit_at, self._expire)
                return
            self._limit_at = None
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(_TIMED_OUT)
            if self.cycle is not None:
                self.cycle.keep_alive = False
            self.transport.close()

    return BoundedHttpToolsProtocol
