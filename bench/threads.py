"""Benchmark ``GET`` and ``POST /v1/threads`` against bare FastAPI endpoints: ``python bench/threads.py``.

The targets (from the issue) are ratios, not absolute numbers, because absolute requests/s on a shared or
noisy machine mean little: listing at >= 0.4 and creating at >= 0.25 of the bare endpoint's requests/s.
Our organization holds 100,000 threads (seeded straight into SQLite before the server starts), so listing
is measured against a realistically large table rather than an empty one. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import ExitStack, closing
from dataclasses import dataclass
from datetime import UTC, datetime
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

from threadline.kit.ids import new_id

# The highest limit `orgs set-limit` accepts; the bucket holds a minute's worth, far more than a run sends.
RATE_LIMIT = 10_000_000
PAGE_SIZE = 20
LIST_PATH = f"/v1/threads?limit={PAGE_SIZE}"
CREATE_PATH = "/v1/threads"
CREATE_BODY = '{"title": "bench", "metadata": {"env": "prod"}}'
# Ids are "thr_" + 26 Crockford base32 characters; the first 10 hold the creation time in milliseconds.
_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_ID_TIME_CHARS = 10


@dataclass(frozen=True)
class Endpoint:
    """One measured operation: what wrk sends, and the goal its ours/baseline ratio is held to."""

    key: str
    label: str
    path: str
    min_ratio: float
    goal: str
    script: Path | None = None


def parse_args() -> argparse.Namespace:
    # No abbreviations: "--thread" would be ambiguous between wrk's threads and the seeded threads.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (-c)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (-t)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per target and endpoint")
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="seconds of wrk per target and endpoint before measuring"
    )
    parser.add_argument(
        "--threads-seeded", type=int, default=100_000, help="threads inserted for the organization first"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "threads.json", help="results JSON file")
    args = parser.parse_args()
    if args.duration <= 0 or args.connections < 1 or args.threads < 1 or args.rounds < 1 or args.warmup < 0:
        parser.error("--duration must be > 0, --connections/--threads/--rounds >= 1, --warmup >= 0")
    if not (args.duration.is_integer() and args.warmup.is_integer()):
        parser.error("--duration and --warmup must be whole seconds: wrk rejects fractions")
    if args.threads_seeded <= PAGE_SIZE:
        parser.error(f"--threads-seeded must be > {PAGE_SIZE}, so the first page has a next cursor")
    return args


def id_time(thread_id: str) -> datetime:
    """The creation time encoded in an id, so each seeded row's ``created_at`` agrees with its id's order,
    as it does for rows our server writes."""
    body = thread_id.partition("_")[2]
    millis = 0
    for char in body[:_ID_TIME_CHARS]:
        millis = millis * 32 + _ID_ALPHABET.index(char)
    return datetime.fromtimestamp(millis / 1000, UTC)


def seed_threads(db_path: Path, organization_id: str, count: int) -> str:
    """Insert ``count`` threads in one transaction and return the newest id.

    Straight into SQLite because 100,000 POSTs would take minutes and would themselves be the benchmark.
    Rows are written as SQLAlchemy writes them: metadata as JSON text, timestamps as naive UTC text, the
    search text as the repository builds it; the FTS5 insert trigger indexes each one, as for real rows."""
    envs = ("prod", "staging", "dev")
    rows = []
    for number in range(count):
        thread_id = new_id("thr")
        title = f"seeded thread {number}"
        metadata = {"env": envs[number % len(envs)], "n": str(number)}
        stamp = id_time(thread_id).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
        search_text = "\n".join([title, *metadata.values()])
        rows.append((thread_id, organization_id, title, json.dumps(metadata), search_text, 0, stamp, stamp))
    with closing(sqlite3.connect(db_path)) as conn, conn:
        conn.executemany(
            "INSERT INTO threads (id, organization_id, title, metadata, search_text, message_count,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return str(rows[-1][0])


def count_threads(db_path: Path, organization_id: str) -> int:
    """Rows the organization holds, read-only, so a run shows that every POST really wrote one."""
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM threads WHERE organization_id = ?", (organization_id,)
        ).fetchone()
    return int(count)


def check_our_answers(
    base_url: str, auth: Mapping[str, str], newest_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check that ours lists the seeded threads and creates one, and return both bodies for the baseline.

    A benchmark of an endpoint that answers the wrong thing (an empty page, a 422) measures nothing."""
    page_response = httpx.get(f"{base_url}{LIST_PATH}", headers=auth, timeout=30)
    if page_response.status_code != 200:
        raise BenchError(f"our GET {LIST_PATH} answered {page_response.status_code}: {page_response.text}")
    page = page_response.json()
    if len(page.get("data", [])) != PAGE_SIZE or not page.get("nextCursor"):
        raise BenchError(f"our GET {LIST_PATH} did not return {PAGE_SIZE} items and a nextCursor: {page}")
    if page["data"][0]["id"] != newest_id:
        raise BenchError(
            f"our first listed thread is {page['data'][0]['id']}, not the newest seeded {newest_id}"
        )
    created_response = httpx.post(
        f"{base_url}{CREATE_PATH}",
        headers={**auth, "content-type": "application/json"},
        content=CREATE_BODY,
        timeout=30,
    )
    if created_response.status_code != 201:
        raise BenchError(
            f"our POST {CREATE_PATH} answered {created_response.status_code}: {created_response.text}"
        )
    created = created_response.json()
    wanted = json.loads(CREATE_BODY)
    if created.get("title") != wanted["title"] or created.get("metadata") != wanted["metadata"]:
        raise BenchError(f"our POST {CREATE_PATH} created something else than was sent: {created}")
    return page, created


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-")))
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir))
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env))
    secret_key, org_id = init["secretKey"], init["organization"]["id"]
    # Before `serve`: without Redis, a running server would not hear about the change.
    run_checked([*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)
    auth = {"Authorization": f"Bearer {secret_key}"}

    db_path = data_dir / "threadline.db"
    if not db_path.is_file():
        raise BenchError(f"`threadline init` did not create {db_path}")
    started = time.monotonic()
    newest_id = seed_threads(db_path, org_id, args.threads_seeded)
    seed_seconds = time.monotonic() - started
    print(f"seeded {args.threads_seeded} threads in {seed_seconds:.1f} s", file=sys.stderr)

    port, intake_port, baseline_port = free_port(), free_port(), free_port()
    ours = stack.enter_context(
        running_server(
            "threadline",
            [*threadline, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://127.0.0.1:{port}/readyz",
            data_dir,
        )
    )
    page, created = check_our_answers(f"http://127.0.0.1:{port}", auth, newest_id)
    # Twenty equal items: the baseline's cost must not depend on which threads happen to be listed.
    baseline_page = {"data": [page["data"][0]] * PAGE_SIZE, "nextCursor": page["nextCursor"]}
    body_file = data_dir / "threads-bodies.json"
    body_file.write_text(json.dumps({"page": baseline_page, "created": created}))

    baseline = stack.enter_context(
        running_server(
            "baseline",
            baseline_argv("baseline_list_app", baseline_port),
            clean_env(BENCH_THREADS_BODY_FILE=str(body_file)),
            f"http://127.0.0.1:{baseline_port}{LIST_PATH}",
            data_dir,
        )
    )
    if httpx.get(f"http://127.0.0.1:{baseline_port}{LIST_PATH}", timeout=10).json() != baseline_page:
        raise BenchError("the baseline's list body differs from the one built from ours")

    create_script = data_dir / "create.lua"
    create_script.write_text(wrk_request_script("POST", CREATE_BODY, {"content-type": "application/json"}))
    endpoints = [
        Endpoint(
            "list", f"GET {LIST_PATH}", LIST_PATH, 0.4, "GET /v1/threads at >= 0.4 of the bare endpoint"
        ),
        Endpoint(
            "create",
            f"POST {CREATE_PATH}",
            CREATE_PATH,
            0.25,
            "POST /v1/threads at >= 0.25 of the bare endpoint",
            create_script,
        ),
    ]
    targets: dict[str, tuple[Server, int]] = {
        "threadline": (ours, port),
        "baseline": (baseline, baseline_port),
    }
    threads_before = count_threads(db_path, org_id)
    ours_create_requests = 0

    def measure(endpoint: Endpoint, name: str, duration: float) -> WrkResult:
        nonlocal ours_create_requests
        server, target_port = targets[name]
        result = run_wrk(
            f"http://127.0.0.1:{target_port}{endpoint.path}",
            duration=duration,
            connections=args.connections,
            threads=args.threads,
            headers=auth,
            script=endpoint.script,
        )
        server.ensure_running()
        if any(result.socket_errors.values()):
            print(
                f"warning: {name} {endpoint.key}: wrk socket errors {result.socket_errors}", file=sys.stderr
            )
        if endpoint.key == "create" and name == "threadline":
            ours_create_requests += result.requests
        return result

    # One endpoint at a time, so list is measured on the seeded table before the POSTs grow it.
    summary: dict[str, Any] = {}
    for endpoint in endpoints:
        rounds: dict[str, list[WrkResult]] = {name: [] for name in targets}
        for name in targets:
            if args.warmup > 0:
                measure(endpoint, name, args.warmup)
        for number in range(1, args.rounds + 1):
            for name in targets:
                result = measure(endpoint, name, args.duration)
                rounds[name].append(result)
                print(
                    f"{endpoint.key:<6}  round {number}/{args.rounds}  {name:<10}"
                    f"  {result.requests_per_sec:>10.1f} req/s  p99 {result.p99_ms:.2f} ms",
                    file=sys.stderr,
                )
        rps = {name: median([r.requests_per_sec for r in results]) for name, results in rounds.items()}
        p99 = {name: median([r.p99_ms for r in results]) for name, results in rounds.items()}
        rps_ratio = ratio(rps["threadline"], rps["baseline"])
        summary[endpoint.key] = {
            "request": endpoint.label,
            "body": CREATE_BODY if endpoint.script else None,
            "targets": {
                name: {"requests_per_sec": rps[name], "p99_ms": p99[name], "rounds": rounds[name]}
                for name in rounds
            },
            "ratios": {"requests_per_sec": rps_ratio, "p99_ms": ratio(p99["threadline"], p99["baseline"])},
            "goal": {
                "text": endpoint.goal,
                "min_ratio": endpoint.min_ratio,
                "met": (rps_ratio or 0) >= endpoint.min_ratio,
            },
        }

    threads_after = count_threads(db_path, org_id)
    # wrk counts completed answers only; requests cut off at the end of a run may still have been written.
    if threads_after - threads_before < ours_create_requests:
        raise BenchError(
            f"wrk saw {ours_create_requests} successful creates, but only "
            f"{threads_after - threads_before} threads were written"
        )
    problems = {name: server.problems() for name, (server, _) in targets.items()}
    for name, lines in problems.items():
        if lines:
            print(f"warning: {name} logged {len(lines)} error line(s), first: {lines[0]}", file=sys.stderr)
    return {
        "benchmark": "GET and POST /v1/threads",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "seeding": {"threads": args.threads_seeded, "seconds": round(seed_seconds, 2)},
        "threads_in_db": {"before_measuring": threads_before, "after_measuring": threads_after},
        "response_bytes": {"list": len(json.dumps(page)), "create": len(json.dumps(created))},
        "server_log_errors": problems,
        "endpoints": summary,
    }


def report(results: dict[str, Any]) -> str:
    rows = []
    goals = []
    for endpoint in results["endpoints"].values():
        for name, target in endpoint["targets"].items():
            rows.append(
                [
                    f"{endpoint['request']}  {name}",
                    f"{target['requests_per_sec']:.1f}",
                    f"{target['p99_ms']:.2f}",
                ]
            )
        ratios = endpoint["ratios"]
        rows.append(
            [
                f"{endpoint['request']}  ours/baseline",
                f"{ratios['requests_per_sec']:.3f}",
                f"{ratios['p99_ms']:.3f}",
            ]
        )
        goal = endpoint["goal"]
        verdict = "MET" if goal["met"] else "NOT MET"
        goals.append(f"target: {goal['text']}: {ratios['requests_per_sec']:.3f} -> {verdict}")
    return f"{format_table(['target', 'req/s', 'p99 ms'], rows)}\n\n" + "\n".join(goals)


def main() -> int:
    args = parse_args()
    require_wrk()
    return run_main(args, benchmark, report, (sqlite3.Error,))


if __name__ == "__main__":
    sys.exit(main())
