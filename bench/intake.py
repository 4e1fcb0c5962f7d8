"""Benchmark the telemetry intake against its two baselines: ``python bench/intake.py``.

Three servers in one run, measured in alternating rounds:

- ceiling: a raw ASGI app that reads the body and answers 202 (``baseline_noop_asgi.py``);
- naive: FastAPI + SQLAlchemy committing one row per request (``baseline_naive_intake.py``), what users
  write themselves, with the same durability as ours (SQLite WAL, synchronous=FULL);
- threadline: ``threadline serve`` on the embedded shape (SQLite), public key, rate limit raised.

Single records at 64 connections (requests/s, p99) on all three; batches of 1,000 records (records/s) on
the ceiling and on ours. ``--against REF`` adds a fourth, ours as of a git ref (exported to a temporary
directory and served from there, with its own database), to both workloads: a change's cost measured in
the same run, as the ratios ``*_vs_against``. Targets (from the issue): single records at >= 0.4 of the
ceiling and >= 10x the naive endpoint; >= 100,000 records/s in batches on SQLite. Afterwards the run
counts the rows in our database: a benchmark that answered 202 without storing would be caught.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS_DIR,
    BenchError,
    Server,
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
    wrk_request_script,
)

RATE_LIMIT = 10_000_000
PATH = "/v1/logs"
BATCH_SIZE = 1000
SINGLE = {
    "message": "user 4211 signed in from 203.0.113.7",
    "level": "info",
    "attributes": {"service": "web", "region": "eu-west-1", "userId": 4211},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections for single records")
    parser.add_argument("--batch-connections", type=int, default=16, help="wrk connections for batches")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per target")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of wrk per target first")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "intake.json", help="results JSON file")
    parser.add_argument(
        "--log-store", choices=("process", "inline"), default="process", help="THREADLINE_LOG_STORE of ours"
    )
    parser.add_argument("--against", metavar="REF", help="also serve ours as of this git ref, for ratios")
    args = parser.parse_args()
    if args.duration <= 0 or args.connections < 1 or args.batch_connections < 1 or args.rounds < 1:
        parser.error("--duration must be > 0, connections and rounds >= 1")
    if not (args.duration.is_integer() and args.warmup.is_integer()):
        parser.error("--duration and --warmup must be whole seconds: wrk rejects fractions")
    return args


def batch_body() -> str:
    records = [
        {**SINGLE, "message": f"request {n} handled in {n % 97} ms", "attributes": {"n": n, "route": "/a"}}
        for n in range(BATCH_SIZE)
    ]
    return json.dumps(records)


def count_rows(db_path: Path) -> int:
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        (count,) = conn.execute("SELECT count(*) FROM log_records").fetchone()
    return int(count)


def serve_ours(
    name: str, data_dir: Path, args: argparse.Namespace, stack: ExitStack, source: Path | None = None
) -> tuple[Server, int, str]:
    """``threadline serve`` on a fresh embedded database in ``data_dir``, from ``source`` (a tree of our
    code, run from there so it is the one imported) or the installed code: the server, its intake port,
    its public key."""
    data_dir.mkdir(exist_ok=True)
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir), THREADLINE_LOG_STORE=args.log_store)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env, cwd=source))
    public_key, org_id = init["publicKey"], init["organization"]["id"]
    limit = [*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)]
    run_checked(limit, env, cwd=source)
    port, intake_port = free_port(), free_port()
    server = stack.enter_context(
        running_server(
            name,
            [*threadline, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://127.0.0.1:{port}/readyz",
            data_dir,
            cwd=source,
        )
    )
    return server, intake_port, public_key


def export_tree(ref: str, into: Path) -> Path:
    """Our code as of ``ref``, as files (``git archive``), without touching any work tree."""
    into.mkdir()
    archive = subprocess.run(
        ["git", "archive", ref], capture_output=True, check=True, cwd=Path(__file__).parent
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-")))
    ours, intake_port, public_key = serve_ours("threadline", data_dir, args, stack)
    keys = {"threadline": public_key}
    ceiling_port, naive_port = free_port(), free_port()
    ceiling = stack.enter_context(
        running_server(
            "ceiling",
            baseline_argv("baseline_noop_asgi", ceiling_port),
            clean_env(),
            f"http://127.0.0.1:{ceiling_port}/",
            data_dir,
        )
    )
    naive = stack.enter_context(
        running_server(
            "naive",
            baseline_argv("baseline_naive_intake", naive_port),
            clean_env(BENCH_NAIVE_DB=str(data_dir / "naive.db")),
            f"http://127.0.0.1:{naive_port}/healthz",
            data_dir,
        )
    )
    targets: dict[str, tuple[Server, int]] = {
        "ceiling": (ceiling, ceiling_port),
        "naive": (naive, naive_port),
        "threadline": (ours, intake_port),
    }
    if args.against:
        source = export_tree(args.against, data_dir / "source")
        against, against_port, keys["against"] = serve_ours(
            "against", data_dir / "against", args, stack, source
        )
        targets["against"] = (against, against_port)
    single_body = json.dumps(SINGLE)
    batch = batch_body()
    for name, key in keys.items():
        url = f"http://127.0.0.1:{targets[name][1]}{PATH}"
        checked = httpx.post(url, headers={"x-service-key": key}, json=SINGLE, timeout=30)
        if checked.status_code != 202 or checked.json() != {"accepted": 1}:
            raise BenchError(f"our intake ({name}) answered {checked.status_code}: {checked.text}")
    checked = httpx.post(f"http://127.0.0.1:{naive_port}{PATH}", json=SINGLE, timeout=30)
    if checked.status_code != 202:
        raise BenchError(f"the naive endpoint answered {checked.status_code}: {checked.text}")

    scripts = {}
    for workload, body in (("single", single_body), ("batch", batch)):
        for name in targets:
            auth = {"x-service-key": keys.get(name, keys["threadline"])}
            script = data_dir / f"{workload}-{name}.lua"
            script.write_text(wrk_request_script("POST", body, {**auth, "content-type": "application/json"}))
            scripts[workload, name] = script

    compared = ("against",) if args.against else ()
    workloads = {
        "single": ("ceiling", "naive", "threadline", *compared),
        "batch": ("ceiling", "threadline", *compared),
    }
    acknowledged = 0

    def measure(workload: str, name: str, duration: float) -> WrkResult:
        nonlocal acknowledged
        server, target_port = targets[name]
        result = run_wrk(
            f"http://127.0.0.1:{target_port}{PATH}",
            duration=duration,
            connections=args.connections if workload == "single" else args.batch_connections,
            script=scripts[workload, name],
        )
        server.ensure_running()
        if name == "threadline":
            acknowledged += result.requests * (1 if workload == "single" else BATCH_SIZE)
        return result

    rows_before = count_rows(data_dir / "threadline.db")
    summary: dict[str, Any] = {}
    for workload, names in workloads.items():
        rounds: dict[str, list[WrkResult]] = {name: [] for name in names}
        for name in names:
            if args.warmup > 0:
                measure(workload, name, args.warmup)
        for number in range(1, args.rounds + 1):
            for name in names:
                result = measure(workload, name, args.duration)
                rounds[name].append(result)
                print(
                    f"{workload:<6}  round {number}/{args.rounds}  {name:<10}"
                    f"  {result.requests_per_sec:>10.1f} req/s  p99 {result.p99_ms:.2f} ms",
                    file=sys.stderr,
                )
        per_request = 1 if workload == "single" else BATCH_SIZE
        summary[workload] = {
            name: {
                "requests_per_sec": median([r.requests_per_sec for r in results]),
                "records_per_sec": median([r.requests_per_sec for r in results]) * per_request,
                "p99_ms": median([r.p99_ms for r in results]),
                "rounds": results,
            }
            for name, results in rounds.items()
        }
    rows_after = count_rows(data_dir / "threadline.db")
    if rows_after - rows_before < acknowledged:
        raise BenchError(
            f"wrk saw {acknowledged} records acknowledged, only {rows_after - rows_before} stored"
        )

    single, batched = summary["single"], summary["batch"]
    ours_rps = single["threadline"]["requests_per_sec"]
    ratios = {
        "single_vs_ceiling": ratio(ours_rps, single["ceiling"]["requests_per_sec"]),
        "single_vs_naive": ratio(ours_rps, single["naive"]["requests_per_sec"]),
        "single_p99_vs_ceiling": ratio(single["threadline"]["p99_ms"], single["ceiling"]["p99_ms"]),
        "batch_vs_ceiling": ratio(
            batched["threadline"]["records_per_sec"], batched["ceiling"]["records_per_sec"]
        ),
    }
    if args.against:
        ratios["single_vs_against"] = ratio(ours_rps, single["against"]["requests_per_sec"])
        ratios["batch_vs_against"] = ratio(
            batched["threadline"]["records_per_sec"], batched["against"]["records_per_sec"]
        )
    goals = {
        "single records >= 0.4 of the ceiling": (ratios["single_vs_ceiling"] or 0) >= 0.4,
        "single records >= 10x the naive endpoint": (ratios["single_vs_naive"] or 0) >= 10,
        ">= 100,000 records/s in batches of 1,000 (SQLite)": batched["threadline"]["records_per_sec"]
        >= 100_000,
    }
    problems = {name: server.problems() for name, (server, _) in targets.items()}
    for name, lines in problems.items():
        if lines:
            print(f"warning: {name} logged {len(lines)} error line(s), first: {lines[0]}", file=sys.stderr)
    return {
        "benchmark": "POST /v1/logs (intake)",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "records": {"acknowledged": acknowledged, "stored": rows_after - rows_before},
        "server_log_errors": problems,
        "workloads": summary,
        "ratios": ratios,
        "goals": goals,
    }


def report(results: dict[str, Any]) -> str:
    rows = []
    for workload, targets in results["workloads"].items():
        for name, target in targets.items():
            rows.append(
                [
                    f"{workload}  {name}",
                    f"{target['requests_per_sec']:.1f}",
                    f"{target['records_per_sec']:.0f}",
                    f"{target['p99_ms']:.2f}",
                ]
            )
    table = format_table(["target", "req/s", "records/s", "p99 ms"], rows)
    ratios = "\n".join(f"{name}: {value:.3f}" for name, value in results["ratios"].items() if value)
    goals = "\n".join(
        f"target: {text} -> {'MET' if met else 'NOT MET'}" for text, met in results["goals"].items()
    )
    return f"{table}\n\n{ratios}\n\n{goals}"


def main() -> int:
    args = parse_args()
    require_wrk()
    return run_main(args, benchmark, report, (sqlite3.Error,))


if __name__ == "__main__":
    sys.exit(main())
