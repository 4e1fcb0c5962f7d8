"""Slow clients are bounded (``threadline.http_protocol``): silence, trickled headers and trickled bodies
end in 408 and a closed connection; past the connection limit a new connection is answered 503."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import Backend
from tests.support import ServerProcess, running_server, threadline

pytestmark = pytest.mark.embedded  # the protocol is the same whatever the storage shape


@pytest.fixture(scope="module")
def server(backend: Backend) -> Iterator[tuple[ServerProcess, str]]:
    env = {
        **backend.env(backend.fresh()),
        "THREADLINE_HEADER_TIMEOUT_SECONDS": "1",
        "THREADLINE_BODY_TIMEOUT_SECONDS": "1.5",
        "THREADLINE_MAX_CONNECTIONS": "8",
    }
    secret = json.loads(threadline("orgs", "create", "slow clients", "--json", env=env).stdout)["secretKey"]
    with running_server(env, startup_timeout=60) as running:
        yield running, secret


def _connect(server: ServerProcess) -> socket.socket:
    address = urlsplit(server.api_url)
    return socket.create_connection((address.hostname or "127.0.0.1", address.port or 80), timeout=10)


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_silent_connection_is_closed(server: tuple[ServerProcess, str]) -> None:
    with _connect(server[0]) as sock:
        started = time.monotonic()
        answer = _read_all(sock)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert 0.9 < waited < 5


def test_trickled_headers_are_cut_off(server: tuple[ServerProcess, str]) -> None:
    """A byte every 0.2 s never finishes the headers: the deadline counts from the first byte, not the
    last, so keeping the connection busy does not keep it open."""
    with _connect(server[0]) as sock:
        started = time.monotonic()
        sock.sendall(b"G")
        closed = False
        for byte in b"ET /v1/me HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            time.sleep(0.2)
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if time.monotonic() - started > 4:
                break
        answer = b"" if closed else _read_all(sock)
    assert closed or answer.startswith(b"HTTP/1.1 408 ")
    assert time.monotonic() - started < 4


def test_a_trickled_body_is_cut_off(server: tuple[ServerProcess, str]) -> None:
    """Authenticated, so the handler waits for the body (a request refused before its body is read is
    answered at once and its connection closed at the same deadline)."""
    head = f"POST /v1/threads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server[1]}\r\n"
    with _connect(server[0]) as sock:
        sock.sendall(head.encode() + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        started = time.monotonic()
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert 1.3 < time.monotonic() - started < 5


def test_prompt_clients_are_unaffected_and_keep_alive_works(server: tuple[ServerProcess, str]) -> None:
    auth = {"Authorization": f"Bearer {server[1]}"}
    with httpx.Client(base_url=server[0].api_url, timeout=10, headers=auth) as http:
        for _ in range(3):
            assert http.get("/healthz").status_code == 200
            time.sleep(0.6)  # between requests: each request gets its own header deadline
        assert http.post("/v1/threads", json={"title": "in time"}).status_code == 201


def test_past_the_connection_limit_a_new_connection_is_refused(server: tuple[ServerProcess, str]) -> None:
    """The held connections each made a request and wait in keep-alive (5 s), past the header deadline."""
    held = [_connect(server[0]) for _ in range(8)]
    try:
        for sock in held:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        with _connect(server[0]) as extra:
            answer = _read_all(extra)
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert b"Too many connections" in answer
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert httpx.get(f"{server[0].api_url}/healthz", timeout=10).status_code == 200
