"""Real MCP servers for the tests, on 127.0.0.1 (the tests allow it with THREADLINE_EGRESS_ALLOW).

``python_peer``: a server built on the official Python SDK (``mcp.server.mcpserver.MCPServer``) serving
Streamable HTTP at ``/mcp`` and the older HTTP+SSE transport at ``/sse``, in a thread of its own. It
records the headers of every request it receives, so tests see what Threadline sent.
``everything_peer``: the MCP project's TypeScript reference server,
``@modelcontextprotocol/server-everything``, run by node from the folder ``scripts/mcp-peers.sh`` installs it
into.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import Receive, Scope, Send

from tests.support import tcp_listener

EVERYTHING_DIR = Path(os.environ.get("THREADLINE_TEST_MCP_PEERS", Path(__file__).parent / "node"))
EVERYTHING_BIN = EVERYTHING_DIR / "node_modules" / ".bin" / "mcp-server-everything"


def build_server() -> MCPServer:
    server = MCPServer("threadline-test-peer")

    @server.tool(description="Says the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Adds two integers.")
    def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    @server.tool(description="Always fails.")
    def explode() -> str:
        raise ValueError("the tool exploded")

    @server.tool(description="Sleeps, then answers.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "late"

    return server


class PythonPeer:
    """``base``: ``http://127.0.0.1:PORT``; ``seen_headers``: each request's headers, lower-cased names;
    ``seen_ports``: the client port of each request's connection."""

    def __init__(self) -> None:
        self.seen_headers: list[dict[str, str]] = []
        self.seen_ports: list[int] = []  # the client's side of each request's connection
        server = build_server()
        self._http = server.streamable_http_app()
        self._sse = server.sse_app()
        self._socket = tcp_listener()
        self._socket.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._uvicorn = uvicorn.Server(uvicorn.Config(self, log_config=None, access_log=False, lifespan="on"))
        self._thread = threading.Thread(target=self._run, name="mcp-python-peer", daemon=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen_headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
            self.seen_ports.append(scope["client"][1])
            if scope["path"].startswith(("/sse", "/messages")):
                await self._sse(scope, receive, send)
                return
        await self._http(scope, receive, send)

    def _run(self) -> None:
        asyncio.run(self._uvicorn.serve(sockets=[self._socket]))

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._uvicorn.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the Python MCP peer did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


@contextmanager
def python_peer() -> Iterator[PythonPeer]:
    peer = PythonPeer()
    peer.start()
    try:
        yield peer
    finally:
        peer.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def everything_peer(mode: str) -> Iterator[str]:
    """server-everything in ``mode`` (``streamableHttp`` or ``sse``); yields its base URL."""
    node = shutil.which("node")
    if node is None or not EVERYTHING_BIN.exists():
        problem = f"server-everything is not installed in {EVERYTHING_DIR}: run scripts/mcp-peers.sh"
        if os.environ.get("THREADLINE_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail(problem)
        pytest.skip(problem)
    port = _free_port()
    process = subprocess.Popen(
        [node, str(EVERYTHING_BIN.resolve()), mode],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server-everything did not start") from None
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)
