"""uvicorn's HTTP protocol (httptools), with bounds on slow clients.

uvicorn bounds only the idle time between requests (keep-alive). A connection that sends nothing, headers
trickled a byte at a time, or a body that never finishes were held as long as the client liked, each
holding a socket and memory: a handful of clients could exhaust a process's connections. Here:

* the request line and headers must arrive within ``header_timeout_seconds`` of the connection opening or
  of the request's first byte;
* the body within ``body_timeout_seconds`` of the headers;
* a process holds at most ``max_connections`` connections; one more is answered 503 and closed;
* the request line and headers hold at most ``max_header_bytes`` bytes and ``max_header_lines`` lines:
  past either, 431 and the connection closed. httptools has no bound of its own and accumulates a header's
  value across reads, so without this a single header line could grow to whatever the client sent within
  the header deadline (600 MB in one second on loopback).

A 431 is a lingering close: the answer, then a half-close (FIN), then what the client still sends is read
and dropped, unparsed, until it closes its side, ``linger_bytes`` more have come or ``linger_seconds`` have
passed. Closing at once, with the rest of the client's headers unread, makes the kernel answer them with a
reset, which can destroy the 431 before the client reads it (a clean-clone CI lost one so). Only the 431
lingers: it is the refusal made while the client is still sending; a 408 is for a client that sends too
slowly to matter, a 503 for one that has had no chance to send yet.

The header bytes are counted per read, before the parser sees them: the part of a read past the cap is never
parsed. Bytes that follow a complete request in the same read (pipelining) are counted from the next read
on, so a header section is bounded by the cap plus one socket read.

A request that runs out of time is answered 408 (if its response has not begun) and its connection closed.
One timer per connection serves both deadlines and is moved rather than recreated, so a keep-alive client
costs no timer per request (the hot path of ``GET /v1/me`` is measured in microseconds).
"""

from __future__ import annotations

import asyncio
from asyncio import TimerHandle
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_HEAD_TOO_LARGE_TEXT = b"Request header fields too large.\n"
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n"
    b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n\r\n%s"
    % (len(_HEAD_TOO_LARGE_TEXT), _HEAD_TOO_LARGE_TEXT)
)

_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
_FULL = (
    b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\n"
    b"content-type: text/plain; charset=utf-8\r\ncontent-length: 34\r\n\r\n"
    b"Too many connections; retry later.\n"
)


class _HeadTooLarge(Exception):
    """Raised from the parser's header callback past the line cap: it stops the parse of that read."""


def bounded_protocol(
    *,
    header_timeout_seconds: float,
    body_timeout_seconds: float,
    max_connections: int,
    max_header_bytes: int = 64 * 1024,
    max_header_lines: int = 100,
    linger_seconds: float = 2.0,
    linger_bytes: int = 1024 * 1024,
) -> type[HttpToolsProtocol]:
    """The protocol class for uvicorn's ``http`` setting, with these bounds."""

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._limit_at: float | None = None
            self._timer: TimerHandle | None = None
            # Bytes of the current request's line and headers so far; None once its headers are complete.
            self._head_bytes: int | None = 0
            self._head_lines = 0
            self._head_refused = False
            # Bytes a refused connection may still send before it is closed; None until a refusal.
            self._discard: int | None = None
            self._linger_timer: TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_FULL)
                transport.close()
                return
            self._arm(header_timeout_seconds)

        def connection_lost(self, exc: Exception | None) -> None:
            self._limit_at = None
            for timer in (self._timer, self._linger_timer):
                if timer is not None:
                    timer.cancel()
            self._timer = self._linger_timer = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._discard is not None:  # refused: heard out, never parsed
                self._discard -= len(data)
                if self._discard < 0:
                    self.transport.close()
                return
            if self._head_bytes is None:  # a body: the body limit and deadline bound it
                super().data_received(data)
                return
            room = max_header_bytes - self._head_bytes
            if len(data) <= room:
                self._head_bytes += len(data)
                super().data_received(data)
                return
            self._head_bytes = max_header_bytes
            super().data_received(data[:room])
            if self._head_bytes is not None:  # the headers did not end within the cap
                self._refuse_head()
            elif not self.transport.is_closing():
                self.data_received(data[room:])

        def on_message_begin(self) -> None:
            self._head_lines = 0
            super().on_message_begin()
            if self._limit_at is None:
                self._arm(header_timeout_seconds)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._head_lines += 1
            if self._head_lines > max_header_lines:
                self._head_refused = True
                raise _HeadTooLarge
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._head_bytes = None
            self._arm(body_timeout_seconds)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._limit_at = None  # the timer, if pending, finds nothing to do
            self._head_bytes = 0
            super().on_message_complete()

        def send_400_response(self, msg: str) -> None:
            """uvicorn answers every parse error 400, ours from ``on_header`` included: that one is 431."""
            if self._head_refused:
                self._refuse_head()
            else:
                super().send_400_response(msg)

        def _refuse_head(self) -> None:
            self._limit_at = None
            if self._discard is not None or self.transport.is_closing():
                return  # refused already (the parser's error and the cap can both end one read)
            self.transport.write(_HEAD_TOO_LARGE)
            answering = self.cycle is not None and not self.cycle.response_complete
            if answering or not self.transport.can_write_eof():
                # A pipelined request's answer still to write (after a FIN it could not be), or TLS: at once.
                self.transport.close()
                return
            self.transport.write_eof()
            self._discard = linger_bytes
            self._linger_timer = self.loop.call_later(linger_seconds, self.transport.close)

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
