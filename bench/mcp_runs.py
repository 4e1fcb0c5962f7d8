"""An MCP tool call through a run against the same call made directly with the ``mcp`` SDK's client, on the
same server, alternating in one run: ``python bench/mcp_runs.py``.

The server is ``bench/mcp_calls.py``'s: the SDK's own ``MCPServer`` with one tool, ``echo``, over Streamable
HTTP on 127.0.0.1, in a process of its own (``mcp_calls.py --serve``), so that neither client shares an
interpreter with it (until 2026-11-27 it ran in a thread of this process, beside the direct client).
Threadline is ``threadline serve`` on a temporary data dir (embedded SQLite, runs executing in the server,
model ``offline/scripted``) with
``THREADLINE_EGRESS_ALLOW=127.0.0.1``; the server is registered (``POST /v1/mcp-servers``) and each run
offers it as ``{"type": "mcp", "serverId": ..., "requireApproval": "never"}``.

Each of ``--calls`` rounds (after ``--warmup`` of each) measures, one after the other:

- **direct**: ``client.call_tool("echo", ...)`` on an SDK ``Client`` whose session is already open (opened
  once, before the rounds), timed around the call, after the session has been idle for 100 ms;
- **through a run**: a thread and a run are created (not timed) whose input is ``#call=echo {"text": ...}``;
  the run's stream is read, and the figure is the time between the arrival, on this client, of the
  stream's ``tool_call_start`` frame and of its ``tool_call_complete`` frame for that call;
- **direct, after a list** (a check, not the target): the same SDK session sends ``tools/list`` and right
  after it the timed ``echo`` call, as a run's session does (its ``tools/list`` precedes the model's turn by
  a few milliseconds). It should match the idle direct call. Until 2026-11-27 it did not: it took ~40 ms
  more, and so did every call of a run. The server's accepted sockets lacked ``TCP_NODELAY`` (its
  listening socket had ``proto`` 0, and the stdlib asyncio loop sets the option only on ``IPPROTO_TCP``
  sockets), so the body of each answer, written after its head, waited for the client's delayed ACK of
  the head whenever the client's kernel delayed it: after a request that closely followed an answer.
  ``mcp_calls.tcp_listener`` fixes the server; see bench/HISTORY.md for the trace.

What the run's interval includes: the run's MCP call (``runs.run_tools``' caller: Threadline's session
layer and the HTTP round trip to the server, the result mapping), the ``tool_call_complete`` event's commit
(the run's recorder commits events in the background, in order) and its delivery over the stream (the
signal, the read of the event, the SSE frame, the HTTP chunk), less the same delivery of the
``tool_call_start`` frame. It does **not** include opening the MCP session: a run opens its session (the
handshake and ``tools/list``) when it starts executing, before the model's turn, so it is done before
``tool_call_start`` is emitted (``threadline/runs/run_tools.py``; ``tests/mcp_servers/test_run_tools.py``
checks one session per stretch of execution). Since the start event is committed while the call is under
way, a start commit slower than the call delays the start frame and shortens the interval, and a complete
commit queued behind it lengthens it; both are part of what a client sees.

Prints p50 and p99 of each, the added p50 (run minus direct) and whether the target of issue 32, **added
latency p50 <= 5 ms**, is MET or NOT MET; writes every sample to ``bench/results/mcp_runs.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS_DIR,
    BenchError,
    clean_env,
    free_port,
    run_checked,
    run_main,
    running_server,
    stop_process,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HOST = "127.0.0.1"
RATE_LIMIT = 10_000_000
TARGET_ADDED_P50_MS = 5.0
PAUSE_S = 0.1


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def frames(response: httpx.Response) -> Any:
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            yield None if data == "[DONE]" else json.loads(data)


async def direct_call(client: Client, text: str, *, after_list: bool = False) -> float:
    if after_list:
        await client.list_tools()
    began = time.perf_counter()
    result = await client.call_tool("echo", {"text": text})
    elapsed = time.perf_counter() - began
    if result.is_error:
        raise BenchError(f"the direct call failed: {result}")
    return elapsed * 1000


async def run_call(
    http: httpx.AsyncClient, auth: dict[str, str], entry: dict[str, Any], text: str, within: float
) -> float:
    thread = (await http.post("/v1/threads", headers=auth, json={})).json()["id"]
    body = {"tools": [entry], "input": "#call=echo " + json.dumps({"text": text})}
    created = await http.post(f"/v1/threads/{thread}/runs", headers=auth, json=body)
    if created.status_code != 201:
        raise BenchError(f"run not created: {created.text}")
    run_id = created.json()["id"]
    started = completed = None
    async with (
        asyncio.timeout(within),
        http.stream("GET", f"/v1/runs/{run_id}/stream", headers=auth) as stream,
    ):
        async for event in frames(stream):
            now = time.perf_counter()
            if event is None:
                break
            if event["type"] == "tool_call_start":
                started = now
            elif event["type"] == "tool_call_complete":
                completed = now
                if event["isError"] or event["result"] != {"result": text}:
                    raise BenchError(f"the run's call failed: {event}")
            elif event["type"] in ("run_failed", "run_requires_action"):
                raise BenchError(f"run {run_id}: {event}")
    if started is None or completed is None:
        raise BenchError(f"run {run_id} made no complete tool call")
    return (completed - started) * 1000


async def measure(args: argparse.Namespace, base: str, auth: dict[str, str], mcp_url: str) -> dict[str, Any]:
    direct: list[float] = []
    after_list: list[float] = []
    through_run: list[float] = []
    async with (
        httpx.AsyncClient(base_url=base, timeout=args.timeout) as http,
        Client(streamable_http_client(mcp_url), cache=None) as client,
    ):
        registered = await http.post(
            "/v1/mcp-servers",
            headers=auth,
            json={"name": "bench", "url": mcp_url, "transport": "streamable_http"},
        )
        if registered.status_code != 201:
            raise BenchError(f"MCP server not registered: {registered.text}")
        entry = {"type": "mcp", "serverId": registered.json()["id"], "requireApproval": "never"}
        for i in range(args.warmup):
            await direct_call(client, f"warm {i}")
            await run_call(http, auth, entry, f"warm {i}", args.timeout)
            await direct_call(client, f"warm {i}", after_list=True)
        for i in range(args.calls):
            await asyncio.sleep(PAUSE_S)  # the direct session idle before its call, as after a run
            direct.append(await direct_call(client, f"call {i}"))
            through_run.append(await run_call(http, auth, entry, f"call {i}", args.timeout))
            after_list.append(await direct_call(client, f"call {i}", after_list=True))
    return {"direct_ms": direct, "run_ms": through_run, "direct_after_list_ms": after_list}


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    logging.disable(logging.INFO)  # the SDK logs each HTTP request at INFO: not what is measured
    # The server in a process of its own: the direct client would otherwise share its interpreter (and
    # GIL) with the server, which a run's call, from Threadline's process, does not.
    peer = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("mcp_calls.py")), "--serve"],
        stdout=subprocess.PIPE,
        text=True,
    )
    stack.callback(stop_process, peer)
    mcp_url = peer.stdout.readline().strip() if peer.stdout is not None else ""
    if not mcp_url.startswith("http://"):
        raise BenchError(f"the MCP server did not start: {mcp_url!r}")
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-mcp-runs-")))
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir), THREADLINE_EGRESS_ALLOW=HOST)
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env))
    org_id = init["organization"]["id"]
    run_checked([*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)
    port, intake_port = free_port(), free_port()
    server = stack.enter_context(
        running_server(
            "threadline-mcp-runs",
            [*threadline, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://{HOST}:{port}/readyz",
            data_dir,
        )
    )
    auth = {"Authorization": f"Bearer {init['secretKey']}"}
    samples = asyncio.run(measure(args, f"http://{HOST}:{port}", auth, mcp_url))
    problems = server.problems()
    if problems:
        raise BenchError("the server logged errors:\n" + "\n".join(problems[:10]))
    figures: dict[str, Any] = {}
    for name, key in (
        ("direct", "direct_ms"),
        ("run", "run_ms"),
        ("direct_after_list", "direct_after_list_ms"),
    ):
        values = samples[key]
        figures[name] = {
            "p50": percentile(values, 0.5),
            "p99": percentile(values, 0.99),
            "mean": statistics.fmean(values),
            "n": len(values),
        }
    added = figures["run"]["p50"] - figures["direct"]["p50"]
    figures["added_p50_ms"] = added
    figures["ratio_p50"] = figures["run"]["p50"] / figures["direct"]["p50"]
    figures["met"] = added <= TARGET_ADDED_P50_MS
    figures["added_p50_vs_after_list_ms"] = figures["run"]["p50"] - figures["direct_after_list"]["p50"]
    figures["samples_ms"] = samples
    figures["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    figures["config"] = {k: str(v) for k, v in vars(args).items()}
    return figures


def report(figures: dict[str, Any]) -> str:
    direct, run, after = figures["direct"], figures["run"], figures["direct_after_list"]
    return "\n".join(
        [
            f"direct mcp client call (n={direct['n']}): p50 {direct['p50']:.2f} ms, "
            f"p99 {direct['p99']:.2f} ms",
            f"through a run, tool_call_start -> tool_call_complete (n={run['n']}): p50 {run['p50']:.2f} ms, "
            f"p99 {run['p99']:.2f} ms",
            f"added p50 {figures['added_p50_ms']:.2f} ms (ratio {figures['ratio_p50']:.2f}x), "
            f"target <= {TARGET_ADDED_P50_MS:g} ms: {'MET' if figures['met'] else 'NOT MET'}",
            f"for comparison, direct right after a tools/list on its session, as a run calls "
            f"(n={after['n']}): "
            f"p50 {after['p50']:.2f} ms, p99 {after['p99']:.2f} ms; the run's p50 minus it "
            f"{figures['added_p50_vs_after_list_ms']:.2f} ms",
        ]
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind, alternating")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds any one run may take")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "mcp_runs.json")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(run_main(parse_args(), benchmark, report))
