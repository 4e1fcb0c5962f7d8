"""A TCP proxy that cuts connections: a real network failure for the client's stream resumption, with the
server and the client both unaware of it. Connection ``i`` is cut after ``budgets[i]`` bytes from the
server (None: never); what each cut connection had received is kept, to tell where the cut fell."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class CuttingProxy:
    def __init__(self, upstream_port: int, budgets: list[int | None]) -> None:
        self.upstream_port = upstream_port
        self.budgets = budgets
        self.received: list[bytes] = []  # per cut connection: the bytes the client got
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._connections = 0
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closing = False
        self._listener.settimeout(0.1)

    def cuts_inside_frames(self) -> int:
        """Cut connections whose last bytes were a frame begun but not ended (past its last blank line)."""
        inside = 0
        for data in self.received:
            body = data.replace(b"\r\n", b"\n")
            tail = body[body.rfind(b"\n\n") + 2 :]
            inside += b"id: " in tail or b"data: " in tail
        return inside

    def _serve(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            budget = self.budgets[self._connections] if self._connections < len(self.budgets) else None
            self._connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            # Each chunk is relayed as it comes: without TCP_NODELAY a small one waits ~40 ms for the ACK
            # of the one before, which the reader's kernel delays.
            for end in (client, upstream):
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sockets += [client, upstream]
            for source, sink, limit in ((client, upstream, None), (upstream, client, budget)):
                thread = threading.Thread(target=self._pump, args=(source, sink, limit), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _pump(self, source: socket.socket, sink: socket.socket, budget: int | None) -> None:
        sent = b""
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                if budget is not None and len(sent) + len(chunk) >= budget:
                    sink.sendall(chunk[: budget - len(sent)])
                    self.received.append(sent + chunk[: budget - len(sent)])
                    break
                if budget is not None:
                    sent += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    @contextmanager
    def running(self) -> Iterator[CuttingProxy]:
        acceptor = threading.Thread(target=self._serve, daemon=True)
        acceptor.start()
        try:
            yield self
        finally:
            self._closing = True
            acceptor.join(timeout=5)
            self._listener.close()
            for end in self._sockets:
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
            for thread in self._threads:
                thread.join(timeout=5)
