"""Runs that wait for their caller's tools, on ``threadline serve`` (embedded SQLite, runs executing in the
server, model ``offline/scripted``): ``python bench/tools.py``.

Two measurements in one run:

1. Client-tool round trip: a run offering one function tool is asked (``#call=lookup_order {...}``) to call
   it; a client streams the run, and from the moment it reads the ``run_requires_action`` frame it posts
   the output (``POST /v1/runs/{id}/tool-outputs``) and waits for the stream's next frame (the call's
   ``tool_call_complete``). ``--round-trips`` runs, one after another; p50 and p99 of that span.
2. Waiting runs hold nothing: ``--waiting`` runs of one organization (each on its own thread) are brought
   to ``requires_action``; the server's resident memory (``VmRSS``) is read before and after, and then
   another organization's run is created and timed from the POST to its ``run_started`` frame on its
   stream (``--probes`` times). With the default ``THREADLINE_MAX_CONCURRENT_RUNS`` of 16, a waiting run
   that kept its slot would leave none for it.

Targets (issue 32): round trip p50 <= 15 ms and p99 <= 50 ms; another organization's run starts within
1 s; RSS grows by less than 50 MiB. Every wait is bounded (``--timeout``). See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from harness import RESULTS_DIR, BenchError, clean_env, free_port, run_checked, run_main, running_server

HOST = "127.0.0.1"
RATE_LIMIT = 10_000_000
MIB = 1024 * 1024
ROUND_TRIP_P50_MS = 15.0
ROUND_TRIP_P99_MS = 50.0
START_WITHIN_S = 1.0
RSS_GROWTH_MIB = 50.0
POSTED_MS: list[float] = []  # from the same instant to the POST's answer, for comparison
TOOLS = [{"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise BenchError("no VmRSS for the server")


async def frames(response: httpx.Response) -> Any:
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            yield None if data == "[DONE]" else json.loads(data)


async def one_round_trip(http: httpx.AsyncClient, auth: dict[str, str], within: float) -> float:
    thread = (await http.post("/v1/threads", headers=auth, json={})).json()["id"]
    body = {"tools": TOOLS, "input": '#call=lookup_order {"id": 7}'}
    created = await http.post(f"/v1/threads/{thread}/runs", headers=auth, json=body)
    if created.status_code != 201:
        raise BenchError(f"run not created: {created.text}")
    run_id = created.json()["id"]
    async with (
        asyncio.timeout(within),
        http.stream("GET", f"/v1/runs/{run_id}/stream", headers=auth) as stream,
    ):
        events = frames(stream)
        async for event in events:
            if event is not None and event["type"] == "run_requires_action":
                break
        began = time.perf_counter()
        outputs = {"toolOutputs": [{"toolCallId": "call_1", "output": {"status": "shipped"}}]}
        posted = asyncio.create_task(http.post(f"/v1/runs/{run_id}/tool-outputs", headers=auth, json=outputs))
        following = await anext(events)
        elapsed = time.perf_counter() - began
        answer = await posted
        POSTED_MS.append((time.perf_counter() - began) * 1000)
        if answer.status_code != 200 or following is None or following["type"] != "tool_call_complete":
            raise BenchError(f"unexpected answer {answer.status_code} {answer.text} / frame {following}")
        async for _ in events:  # to [DONE]: the run ends before the next one starts
            pass
    return elapsed * 1000


async def bring_to_waiting(http: httpx.AsyncClient, auth: dict[str, str], count: int, within: float) -> float:
    began = time.monotonic()
    semaphore = asyncio.Semaphore(16)

    async def one() -> str:
        async with semaphore:
            thread = (await http.post("/v1/threads", headers=auth, json={})).json()["id"]
            body = {"tools": TOOLS, "input": "#call=lookup_order {}", "actionTimeoutSeconds": 86_400}
            created = await http.post(f"/v1/threads/{thread}/runs", headers=auth, json=body)
            if created.status_code != 201:
                raise BenchError(f"run not created: {created.text}")
            return str(created.json()["id"])

    ids = await asyncio.gather(*(one() for _ in range(count)))
    async with asyncio.timeout(within):
        pending = set(ids)
        while pending:
            for run_id in list(pending)[:64]:
                status = (await http.get(f"/v1/runs/{run_id}", headers=auth)).json()["status"]
                if status == "requires_action":
                    pending.discard(run_id)
                elif status != "queued" and status != "running":
                    raise BenchError(f"run {run_id} is {status}, not waiting")
            await asyncio.sleep(0.05)
    return time.monotonic() - began


async def start_latency(http: httpx.AsyncClient, auth: dict[str, str], within: float) -> float:
    thread = (await http.post("/v1/threads", headers=auth, json={})).json()["id"]
    began = time.perf_counter()
    created = await http.post(f"/v1/threads/{thread}/runs", headers=auth, json={"input": "#notools hello"})
    run_id = created.json()["id"]
    async with (
        asyncio.timeout(within),
        http.stream("GET", f"/v1/runs/{run_id}/stream", headers=auth) as stream,
    ):
        async for event in frames(stream):
            if event is not None and event["type"] == "run_started":
                return time.perf_counter() - began
    raise BenchError("the other organization's run never started")


async def measure(
    args: argparse.Namespace, base: str, auth: dict[str, str], other: dict[str, str], pid: int
) -> Any:
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=base, timeout=args.timeout, limits=limits) as http:
        for _ in range(args.warmup):
            await one_round_trip(http, auth, args.timeout)
        trips = [await one_round_trip(http, auth, args.timeout) for _ in range(args.round_trips)]
        rss_before = rss_bytes(pid)
        waited = await bring_to_waiting(http, auth, args.waiting, args.timeout * 10)
        rss_after = rss_bytes(pid)
        starts = [await start_latency(http, other, args.timeout) for _ in range(args.probes)]
    return {
        "round_trip_ms": {
            "p50": percentile(trips, 0.5),
            "p99": percentile(trips, 0.99),
            "mean": statistics.fmean(trips),
            "max": max(trips),
            "n": len(trips),
            "post_answered_p50": percentile(POSTED_MS[-len(trips) :], 0.5),
        },
        "waiting": {
            "runs": args.waiting,
            "seconds_to_bring_to_waiting": waited,
            "rss_before_mib": rss_before / MIB,
            "rss_after_mib": rss_after / MIB,
            "rss_growth_mib": (rss_after - rss_before) / MIB,
            "other_org_start_s": starts,
        },
    }


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-tools-")))
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir))
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env))
    other = json.loads(run_checked([*threadline, "orgs", "create", "other", "--json"], env))
    for org in (init, other):
        org_id = org["organization"]["id"]
        run_checked([*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)
    port, intake_port = free_port(), free_port()
    server = stack.enter_context(
        running_server(
            "threadline-tools",
            [*threadline, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://{HOST}:{port}/readyz",
            data_dir,
        )
    )
    auth = {"Authorization": f"Bearer {init['secretKey']}"}
    other_auth = {"Authorization": f"Bearer {other['secretKey']}"}
    figures = asyncio.run(measure(args, f"http://{HOST}:{port}", auth, other_auth, server.process.pid))
    problems = server.problems()
    if problems:
        raise BenchError("the server logged errors:\n" + "\n".join(problems[:10]))
    trip, waiting = figures["round_trip_ms"], figures["waiting"]
    figures["met"] = {
        "round_trip_p50": trip["p50"] <= ROUND_TRIP_P50_MS,
        "round_trip_p99": trip["p99"] <= ROUND_TRIP_P99_MS,
        "other_org_starts": max(waiting["other_org_start_s"]) <= START_WITHIN_S,
        "rss_growth": waiting["rss_growth_mib"] < RSS_GROWTH_MIB,
    }
    figures["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    figures["config"] = {k: str(v) for k, v in vars(args).items()}
    return figures


def report(figures: dict[str, Any]) -> str:
    trip, waiting, met = figures["round_trip_ms"], figures["waiting"], figures["met"]
    starts = waiting["other_org_start_s"]
    return "\n".join(
        [
            f"client-tool round trip (n={trip['n']}): p50 {trip['p50']:.2f} ms "
            f"(target <= {ROUND_TRIP_P50_MS:g}), "
            f"p99 {trip['p99']:.2f} ms (target <= {ROUND_TRIP_P99_MS:g}), max {trip['max']:.2f} ms; the POST "
            f"itself answered in p50 {trip['post_answered_p50']:.2f} ms",
            f"{waiting['runs']} runs waiting (reached in {waiting['seconds_to_bring_to_waiting']:.1f} s): "
            "RSS "
            f"{waiting['rss_before_mib']:.1f} -> {waiting['rss_after_mib']:.1f} MiB, "
            f"+{waiting['rss_growth_mib']:.1f} MiB (target < {RSS_GROWTH_MIB:g})",
            f"another organization's run started in max {max(starts) * 1000:.1f} ms, median "
            f"{statistics.median(starts) * 1000:.1f} ms over {len(starts)} (target <= {START_WITHIN_S:g} s)",
            "targets met: " + ", ".join(f"{name} {'yes' if ok else 'NO'}" for name, ok in met.items()),
        ]
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--round-trips", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--waiting", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds any one step may take")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "tools.json")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(run_main(parse_args(), benchmark, report))
