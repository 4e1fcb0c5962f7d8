"""The lingering close of a 431 (``threadline.http_protocol``), in this process: the protocol on a real
loopback socket of the test's own loop, its client a blocking socket in a thread. What a served process
does with the same bounds is tests/test_request_bounds.py and tests/test_slow_clients.py."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from starlette.types import Receive, Scope, Send
from uvicorn import Config
from uvicorn.server import ServerState

from threadline.http_protocol import bounded_protocol

_CAP = 1024


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@asynccontextmanager
async def serving(**bounds: Any) -> AsyncIterator[int]:
    """A port on 127.0.0.1 served by the bounded protocol (a 1 KiB header cap) until the block ends."""
    protocol = bounded_protocol(
        header_timeout_seconds=30,
        body_timeout_seconds=30,
        max_connections=10,
        max_header_bytes=_CAP,
        **bounds,
    )
    config, state = Config(_ok, log_config=None, access_log=False, lifespan="off"), ServerState()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: protocol(config, state, {}), "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def _head(size: int) -> bytes:
    return b"GET / HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * size


def exchange(port: int, pieces: Iterable[bytes], *, half_close: bool = True) -> tuple[int, bytes, str]:
    """Sends ``pieces`` (half-closing after them) and reads until the server closes: bytes sent, the
    answer, and how the connection ended ("eof": a clean close; else the error that cut it)."""
    sent, chunks, ended = 0, [], "eof"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            for piece in pieces:
                sock.sendall(piece)
                sent += len(piece)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            ended = type(exc).__name__
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except OSError as exc:
            ended = type(exc).__name__
    return sent, b"".join(chunks), ended


async def test_a_refused_head_is_answered_then_heard_out_to_a_clean_close() -> None:
    """A megabyte past a 1 KiB cap: the 431, then the rest read and dropped until the client's FIN, so the
    connection ends in a FIN both ways and never in a reset (what could destroy the answer)."""
    async with serving() as port:
        sent, answer, ended = await asyncio.to_thread(exchange, port, [_head(1024 * 1024), b"\r\n\r\n"])
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert answer.endswith(b"Request header fields too large.\n")
    assert (sent, ended) == (len(_head(1024 * 1024)) + 4, "eof")


async def test_a_client_still_sending_past_the_linger_bytes_is_cut_off() -> None:
    """64 MiB offered, 64 KiB heard out: the server closes long before the end."""
    async with serving(linger_bytes=64 * 1024) as port:
        flood = [_head(0), *(b"a" * 65536 for _ in range(1024))]
        sent, _answer, ended = await asyncio.to_thread(exchange, port, flood)
    assert sent < 16 * 1024 * 1024  # the rest of the 64 MiB was refused: the server had closed
    assert ended in {"BrokenPipeError", "ConnectionResetError"}  # (whether the 431 survives that is not ours)


async def test_a_client_that_never_closes_is_closed_when_the_linger_time_is_up() -> None:
    """No linger time at all: a client that sent its whole (too large) head and then only reads, never
    closing, still has its answer and the connection's end (else its read would time out after 10 s)."""
    async with serving(linger_seconds=0) as port:
        _sent, answer, ended = await asyncio.to_thread(exchange, port, [_head(2 * _CAP)], half_close=False)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert ended == "eof"


async def test_a_head_within_the_cap_is_served_on_the_same_protocol() -> None:
    async with serving() as port:
        _sent, answer, ended = await asyncio.to_thread(
            exchange, port, [b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]
        )
    assert answer.startswith(b"HTTP/1.1 204 "), answer[:200]
    assert ended == "eof"
