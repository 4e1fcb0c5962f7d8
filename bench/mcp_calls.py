"""An MCP tool call through Threadline's session layer (``mcp_servers.connection``: the egress-pinned HTTP
client, the session held by a task of its own, the result mapping) against the same call made directly with
the ``mcp`` SDK's client, on the same server (the SDK's own, Streamable HTTP, on 127.0.0.1), alternating
rounds. The run integration will add its own part on top; this is the floor it starts from.

    python bench/mcp_calls.py [--calls 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import statistics
import threading
import time
from pathlib import Path

import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

from threadline.kit.egress import EgressPolicy
from threadline.mcp_servers.connection import Endpoint, open_session

TARGET_ADDED_P50_MS = 5.0


def tcp_listener() -> socket.socket:
    """A listening socket whose accepted connections get ``TCP_NODELAY``. The stdlib asyncio loop sets it
    only on sockets whose ``proto`` is ``IPPROTO_TCP``; ``socket.socket()`` (and ``socket.create_server``)
    leave ``proto`` 0, and an accepted socket inherits it. Without ``TCP_NODELAY``, uvicorn's two writes
    of a response (head, then body) meet the client's delayed ACK: the body waits ~40 ms for the ACK of
    the head whenever the client's kernel delays it, which it does once requests follow answers closely
    (a ``tools/list`` then a call). ``uvicorn.run(app, host=..., port=...)`` binds through asyncio's
    ``create_server``, which sets ``proto``, so that is how the SDK's server is usually deployed.
    (HISTORY.md, 2026-11-27.)"""
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)


def serve() -> tuple[str, uvicorn.Server]:
    server = MCPServer("bench")

    @server.tool()
    def echo(text: str) -> str:
        return text

    sock = tcp_listener()
    sock.bind(("127.0.0.1", 0))
    runner = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="error", lifespan="on"))
    threading.Thread(target=lambda: asyncio.run(runner.serve(sockets=[sock])), daemon=True).start()
    while not runner.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", runner


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def direct(url: str, calls: int) -> list[float]:
    samples = []
    async with Client(streamable_http_client(url), cache=None) as client:
        for i in range(calls):
            started = time.perf_counter()
            await client.call_tool("echo", {"text": f"call {i}"})
            samples.append((time.perf_counter() - started) * 1000)
    return samples


async def through_threadline(url: str, calls: int) -> list[float]:
    samples = []
    endpoint = Endpoint(url, "streamable_http", {"Authorization": "Bearer bench"}, 30.0)
    async with open_session(endpoint, EgressPolicy("127.0.0.1")) as session:
        for i in range(calls):
            started = time.perf_counter()
            result = await session.call_tool("echo", {"text": f"call {i}"})
            samples.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result
    return samples


async def main(calls: int, rounds: int) -> None:
    logging.disable(logging.INFO)  # the SDK logs each HTTP request at INFO: not what is measured
    url, runner = serve()
    rows = []
    for round_number in range(1, rounds + 1):
        plain = await direct(url, calls)
        ours = await through_threadline(url, calls)
        rows.append(
            {
                "round": round_number,
                "direct_p50": statistics.median(plain),
                "direct_p99": percentile(plain, 0.99),
                "threadline_p50": statistics.median(ours),
                "threadline_p99": percentile(ours, 0.99),
            }
        )
    runner.should_exit = True
    print(
        f"{'round':>5}  {'direct p50':>10}  {'p99':>7}  {'threadline p50':>14}  {'p99':>7}  {'added p50':>9}"
    )
    for row in rows:
        added = row["threadline_p50"] - row["direct_p50"]
        print(
            f"{row['round']:>5}  {row['direct_p50']:>8.2f}ms  {row['direct_p99']:>5.2f}ms  "
            f"{row['threadline_p50']:>12.2f}ms  {row['threadline_p99']:>5.2f}ms  {added:>7.2f}ms"
        )
    added_p50 = statistics.median(r["threadline_p50"] - r["direct_p50"] for r in rows)
    verdict = "met" if added_p50 <= TARGET_ADDED_P50_MS else "MISSED"
    print(f"added p50 (median of rounds) {added_p50:.2f} ms, target <= {TARGET_ADDED_P50_MS} ms: {verdict}")
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "mcp_calls.json").write_text(json.dumps(rows, indent=2))


def serve_alone() -> None:
    """``--serve``: only the server, in this process, its URL on the first line of the output, until
    killed (``mcp_runs.py`` measures against it from other processes)."""
    logging.disable(logging.INFO)
    url, _ = serve()
    print(url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help="only serve, printing the URL (mcp_runs.py)")
    arguments = parser.parse_args()
    if arguments.serve:
        serve_alone()
    else:
        asyncio.run(main(arguments.calls, arguments.rounds))
