"""A run created with ``agentId`` against one with the same fields inline: ``python bench/agents.py``.

The target (issue 33) is a ratio: a run made from an agent costs at most 1.2x one that carries the agent's
fields itself (model, instructions, tools, actionTimeoutSeconds) in its body. Both kinds of request go to
one ``threadline serve`` (embedded SQLite) with no run executor (``THREADLINE_RUN_EXECUTION=worker`` and no
worker), so the runs stay queued and only their creation is measured; each run goes to a thread of its own
(made beforehand), so no thread's queue grows while it is measured. Rounds alternate which kind goes
first, and the figure is the median of the rounds' ratios of mean latency (agent / inline) at the same
concurrency. See bench/README.md.
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
TARGET_RATIO = 1.2
AGENT = {
    "name": "support triage",
    "model": "offline/scripted",
    "instructions": "You triage support tickets. " * 40,
    "tools": [
        {"type": "builtin", "name": "search_messages"},
        {"type": "builtin", "name": "query_logs"},
        {
            "type": "function",
            "name": "lookup_order",
            "description": "The order's state.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        },
    ],
    "actionTimeoutSeconds": 300,
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=300, help="runs of each kind per round")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at once")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "agents.json", help="results JSON file")
    args = parser.parse_args()
    if args.runs < 1 or args.rounds < 1 or args.concurrency < 1:
        parser.error("--runs, --rounds and --concurrency must be >= 1")
    return args


async def post_runs(
    http: httpx.AsyncClient, threads: list[str], body: dict[str, Any], concurrency: int
) -> list[float]:
    """Each thread gets one run; the latencies in ms. Every answer is checked: a benchmark of a request
    that fails measures nothing."""
    pending = list(threads)
    latencies: list[float] = []

    async def worker() -> None:
        while pending:
            thread_id = pending.pop()
            started = time.perf_counter()
            response = await http.post(f"/v1/threads/{thread_id}/runs", json=body)
            latencies.append((time.perf_counter() - started) * 1000)
            if response.status_code != 201:
                raise BenchError(f"POST runs answered {response.status_code}: {response.text}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


async def measure(args: argparse.Namespace, base_url: str, auth: dict[str, str]) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=base_url, headers=auth, timeout=30, limits=limits) as http:
        created = await http.post("/v1/agents", json=AGENT)
        if created.status_code != 201:
            raise BenchError(f"POST /v1/agents answered {created.status_code}: {created.text}")
        agent_id = created.json()["id"]
        inline = {**{k: v for k, v in AGENT.items() if k != "name"}, "input": "#notools hello"}
        with_agent = {"agentId": agent_id, "input": "#notools hello"}
        first = await http.post("/v1/threads", json={})
        run = (await http.post(f"/v1/threads/{first.json()['id']}/runs", json=with_agent)).json()
        check = (await http.post("/v1/threads", json={})).json()["id"]
        same = (await http.post(f"/v1/threads/{check}/runs", json=inline)).json()
        if [run[k] for k in ("model", "instructions", "tools")] != [
            same[k] for k in ("model", "instructions", "tools")
        ]:
            raise BenchError("the agent's run and the inline run do not have the same effective fields")
        rounds = []
        for number in range(args.rounds):
            kinds = [("inline", inline), ("agent", with_agent)]
            if number % 2:
                kinds.reverse()
            figures: dict[str, list[float]] = {}
            for kind, body in kinds:
                threads = [
                    (await http.post("/v1/threads", json={"title": f"{kind} {i}"})).json()["id"]
                    for i in range(args.runs)
                ]
                figures[kind] = await post_runs(http, threads, body, args.concurrency)
            means = {kind: statistics.fmean(values) for kind, values in figures.items()}
            rounds.append(
                {
                    "first": kinds[0][0],
                    "mean_ms": means,
                    "p50_ms": {kind: statistics.median(values) for kind, values in figures.items()},
                    "ratio": means["agent"] / means["inline"],
                }
            )
    ratio = statistics.median(r["ratio"] for r in rounds)
    return {"rounds": rounds, "ratio": ratio, "target": TARGET_RATIO, "met": ratio <= TARGET_RATIO}


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-agents-")))
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir), THREADLINE_RUN_EXECUTION="worker")
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env))
    org_id = init["organization"]["id"]
    run_checked([*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)
    port, intake_port = free_port(), free_port()
    server = stack.enter_context(
        running_server(
            "threadline-agents",
            [*threadline, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://{HOST}:{port}/readyz",
            data_dir,
        )
    )
    figures = asyncio.run(
        measure(args, f"http://{HOST}:{port}", {"Authorization": f"Bearer {init['secretKey']}"})
    )
    problems = server.problems()
    if problems:
        raise BenchError("the server logged errors:\n" + "\n".join(problems[:10]))
    figures["settings"] = {"runs": args.runs, "rounds": args.rounds, "concurrency": args.concurrency}
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = ["round  first   inline mean/p50 ms   agent mean/p50 ms   ratio"]
    for number, r in enumerate(figures["rounds"], 1):
        mean, p50 = r["mean_ms"], r["p50_ms"]
        lines.append(
            f"{number:>5}  {r['first']:<6}  {mean['inline']:8.2f} / {p50['inline']:6.2f}"
            f"   {mean['agent']:8.2f} / {p50['agent']:6.2f}   {r['ratio']:.3f}"
        )
    verdict = "met" if figures["met"] else "MISSED"
    ratio = figures["ratio"]
    lines.append(f"\nagentId / inline cost (median of rounds): {ratio:.3f} (<= {TARGET_RATIO}: {verdict})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(run_main(parse_args(), benchmark, report))
