"""Benchmark ``GET /v1/me`` against a bare FastAPI endpoint returning the same body: ``python bench/me.py``.

The target (from the issue) is a ratio, not an absolute number, because absolute requests/s on a shared or
noisy machine mean little; both servers are measured in the same run, in alternating rounds, and the
medians are compared. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import platform
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
    WrkResult,
    baseline_argv,
    clean_env,
    format_table,
    free_port,
    median,
    ratio,
    require_wrk,
    run_checked,
    run_main,
    run_wrk,
    running_server,
)

TARGET_RATIO = 0.8
TARGET_TEXT = "GET /v1/me at >= 0.8 of the bare FastAPI endpoint's requests/s"
# Metrics (issue 35): the ratio with metrics on keeps >= 0.85 of the ratio with THREADLINE_METRICS=false.
# Both servers are measured in the same rounds against the same baseline, so this is on/off requests/s.
METRICS_RATIO = 0.85
METRICS_TEXT = "with metrics on, >= 0.85 of the ratio with THREADLINE_METRICS=false"
# The highest limit `orgs set-limit` accepts; the bucket holds a minute's worth, far more than a run sends.
RATE_LIMIT = 10_000_000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (-c)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (-t)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per target")
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="seconds of wrk per target before measuring"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "me.json", help="results JSON file")
    args = parser.parse_args()
    if args.duration <= 0 or args.connections < 1 or args.threads < 1 or args.rounds < 1 or args.warmup < 0:
        parser.error("--duration must be > 0, --connections/--threads/--rounds >= 1, --warmup >= 0")
    return args


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-")))
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir))
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env))
    secret_key, org_id = init["secretKey"], init["organization"]["id"]
    # Before `serve`: without Redis, a running server would not hear about the change.
    run_checked([*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)
    auth = {"Authorization": f"Bearer {secret_key}"}

    port, intake_port, baseline_port = free_port(), free_port(), free_port()
    off_port, off_intake_port = free_port(), free_port()
    ours = stack.enter_context(
        running_server(
            "threadline",
            [*threadline, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://127.0.0.1:{port}/readyz",
            data_dir,
        )
    )
    # The same server on the same database without metrics: what counting costs, measured in the same run.
    without_metrics = stack.enter_context(
        running_server(
            "threadline-metrics-off",
            [*threadline, "serve", "--port", str(off_port), "--intake-port", str(off_intake_port)],
            {**env, "THREADLINE_METRICS": "false"},
            f"http://127.0.0.1:{off_port}/readyz",
            data_dir,
        )
    )
    response = httpx.get(f"http://127.0.0.1:{port}/v1/me", headers=auth, timeout=10)
    if response.status_code != 200:
        raise BenchError(f"our /v1/me answered {response.status_code}: {response.text}")
    body_file = data_dir / "me-body.json"
    body_file.write_bytes(response.content)

    baseline = stack.enter_context(
        running_server(
            "baseline",
            baseline_argv("baseline_app", baseline_port),
            clean_env(BENCH_ME_BODY_FILE=str(body_file)),
            f"http://127.0.0.1:{baseline_port}/v1/me",
            data_dir,
        )
    )
    if httpx.get(f"http://127.0.0.1:{baseline_port}/v1/me", timeout=10).json() != response.json():
        raise BenchError("the baseline's /v1/me body differs from ours; the comparison would be unfair")

    targets = {
        "threadline": (ours, port),
        "metrics-off": (without_metrics, off_port),
        "baseline": (baseline, baseline_port),
    }
    rounds: dict[str, list[WrkResult]] = {name: [] for name in targets}

    def measure(name: str, duration: float) -> WrkResult:
        server, target_port = targets[name]
        url = f"http://127.0.0.1:{target_port}/v1/me"
        result = run_wrk(
            url, duration=duration, connections=args.connections, threads=args.threads, headers=auth
        )
        server.ensure_running()
        if any(result.socket_errors.values()):
            print(f"warning: {name}: wrk socket errors {result.socket_errors}", file=sys.stderr)
        return result

    for name in targets:
        if args.warmup > 0:
            measure(name, args.warmup)
    for number in range(1, args.rounds + 1):
        for name in targets:
            result = measure(name, args.duration)
            rounds[name].append(result)
            print(
                f"round {number}/{args.rounds}  {name:<10}  {result.requests_per_sec:>10.1f} req/s"
                f"  p99 {result.p99_ms:.2f} ms",
                file=sys.stderr,
            )

    problems = {name: server.problems() for name, (server, _) in targets.items()}
    for name, lines in problems.items():
        if lines:
            print(f"warning: {name} logged {len(lines)} error line(s), first: {lines[0]}", file=sys.stderr)
    rps = {name: median([r.requests_per_sec for r in results]) for name, results in rounds.items()}
    p99 = {name: median([r.p99_ms for r in results]) for name, results in rounds.items()}
    summary = {
        name: {"requests_per_sec": rps[name], "p99_ms": p99[name], "rounds": rounds[name]} for name in rounds
    }
    rps_ratio = ratio(rps["threadline"], rps["baseline"])
    p99_ratio = ratio(p99["threadline"], p99["baseline"])
    off_ratio = ratio(rps["metrics-off"], rps["baseline"])
    metrics_kept = ratio(rps_ratio or 0, off_ratio or 0)
    return {
        "benchmark": "GET /v1/me",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "response_bytes": len(response.content),
        "server_log_errors": problems,
        "targets": summary,
        "ratios": {
            "requests_per_sec": rps_ratio,
            "p99_ms": p99_ratio,
            "metrics_off_requests_per_sec": off_ratio,
            "metrics_on_of_off": metrics_kept,
        },
        "goal": {"text": TARGET_TEXT, "min_ratio": TARGET_RATIO, "met": (rps_ratio or 0) >= TARGET_RATIO},
        "metrics_goal": {
            "text": METRICS_TEXT,
            "min_ratio": METRICS_RATIO,
            "met": (metrics_kept or 0) >= METRICS_RATIO,
        },
    }


def report(results: dict[str, Any]) -> str:
    rows = [
        [name, f"{t['requests_per_sec']:.1f}", f"{t['p99_ms']:.2f}"] for name, t in results["targets"].items()
    ]
    ratios = results["ratios"]
    rows.append(["ours/baseline", f"{ratios['requests_per_sec']:.3f}", f"{ratios['p99_ms']:.3f}"])
    rows.append(["metrics-off/baseline", f"{ratios['metrics_off_requests_per_sec']:.3f}", ""])
    rows.append(["on/off", f"{ratios['metrics_on_of_off']:.3f}", ""])
    lines = [format_table(["target", "req/s", "p99 ms"], rows), ""]
    for goal in (results["goal"], results["metrics_goal"]):
        lines.append(f"target: {goal['text']}: {'MET' if goal['met'] else 'NOT MET'}")
    return "\n".join(lines)


def main() -> int:
    args = parse_args()
    require_wrk()
    return run_main(args, benchmark, report, ())


if __name__ == "__main__":
    sys.exit(main())
