"""A webhook receiver speaking real HTTP on 127.0.0.1 (the standard library's threading server), which
deduplicates nothing: it records every request and answers as each path is told to (statuses in turn, or
hang for a while, as a dead endpoint does)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() when it arrived


@dataclass
class Receiver:
    url: str
    received: list[Received] = field(default_factory=list)
    statuses: dict[str, list[int]] = field(default_factory=dict)  # path -> statuses to answer, in turn
    hang: dict[str, float] = field(default_factory=dict)  # path -> seconds to wait before answering
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def at(self, path: str) -> list[Received]:
        with self.arrived:
            return [r for r in self.received if r.path == path]

    def wait_for(self, path: str, count: int = 1, timeout: float = 15) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len([r for r in self.received if r.path == path]) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{path}: {len(self.at(path))} of {count} deliveries arrived")
                self.arrived.wait(left)
            return [r for r in self.received if r.path == path]


def verified(secret: str, received: Received) -> dict[str, Any]:
    """The payload, verified by the Standard Webhooks specification's own library (raises if it fails)."""
    payload: dict[str, Any] = Webhook(secret).verify(received.body, received.headers)
    return payload


@contextmanager
def receiving() -> Iterator[Receiver]:
    state: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY on each connection: the answer is two writes (head, then body), and without it the
        # body waits ~40 ms for the ACK of the head that the dispatcher's kernel delays.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            receiver = state[0]
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            with receiver.arrived:
                receiver.received.append(
                    Received(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()
                    )
                )
                receiver.arrived.notify_all()
                statuses = receiver.statuses.get(self.path)
                status = statuses.pop(0) if statuses else 200
                hang = receiver.hang.get(self.path, 0.0)
            time.sleep(hang)
            self.send_response(status)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.append(Receiver(url=f"http://127.0.0.1:{server.server_address[1]}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state[0]
    finally:
        server.shutdown()
        server.server_close()
