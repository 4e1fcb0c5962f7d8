"""A soak of every part at once: ``python bench/soak.py [--minutes 10] [--shape embedded|distributed|both]``.

For ``--minutes`` (default 10, 1 to 60), on loopback only, against servers it starts itself:

- intake batches (``--batch`` records, ``--batches-per-second``; one batch in twenty carries an error record
  that fires the log trigger) and API reads and writes (threads, messages, search, logs, settings: a fixed
  mix at ``--api-per-second``), from one client process;
- ``--tails`` live log tails and ``--run-streams`` run streams (each follows one run to ``[DONE]``, then
  starts the next run on its thread: runs keep executing), 200 open streams by default, from another;
- two automations: a schedule (every minute) and a log trigger (``contains`` the alert text, 10 s cooldown);
- ``GET /v1/me`` from this process at ``--probe-rate`` a second on one keep-alive connection: its latency.

Shapes: ``embedded`` is ``threadline serve`` on a temporary data dir (SQLite, runs in the server);
``distributed`` is ``threadline serve`` on a database of its own on PostgreSQL (dropped at the end) and
Redis under a key prefix of its own (its keys deleted at the end), with two ``threadline worker`` processes
executing the runs and the schedules.

Criteria (each shape): errors 0 (client-side failures of any kind, unexpected 4xx, transport errors, runs
not completed, tails closed by the server, server log lines with a traceback or ERROR); 5xx 0; records
acknowledged (202) and missing from ``GET /v1/logs`` at the end 0; records missed by a live tail 0; server
memory (RSS summed over the server processes and their children) at the end within 10 % of what it was at
20 % of the duration (minute 2 of 10); ``GET /v1/me`` p99 < 50 ms. Prints a table per shape with pass or
fail per criterion and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from harness import RESULTS_DIR, BenchError, format_table, interrupt_on_sigterm
from soak_clients import load_main, streams_main
from soak_servers import (
    HOST,
    Probe,
    automation_runs,
    count_logs,
    cpu_seconds,
    create_automations,
    percentiles,
    rss_mib,
    start_servers,
)

P99_TARGET_MS = 50.0
RSS_GROWTH_TARGET = 0.10
MAX_MINUTES = 60.0
SHAPES = ("embedded", "distributed")
INFORMATION = "(information)"  # a row of the table that is no criterion


# ---------------------------------------------------------------------------------------------------------
# One shape's soak.


class Child:
    """A client process of bench/soak_clients.py, talking over a pipe; terminated on any exit path."""

    def __init__(self, name: str, target: Any, config: dict[str, Any]) -> None:
        self.name = name
        context = multiprocessing.get_context("fork")  # before any thread of ours is started
        self.conn, child = context.Pipe()
        self.process = context.Process(target=target, args=(child, config), daemon=True, name=name)
        self.process.start()

    def receive(self, timeout: float) -> dict[str, Any]:
        if not self.conn.poll(timeout):
            raise BenchError(f"the {self.name} process did not answer within {timeout:g} s")
        answer: dict[str, Any] = self.conn.recv()
        if "error" in answer:
            raise BenchError(f"{self.name}: {answer['error']}")
        return answer

    def ask(self, command: str, timeout: float = 180.0) -> dict[str, Any]:
        self.conn.send(command)
        return self.receive(timeout)

    def close(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _failures(tally: dict[str, Any]) -> tuple[int, int]:
    outcomes = tally["outcomes"]
    return sum(n for outcome, n in outcomes.items() if outcome != "ok"), outcomes.get("http_5xx", 0)


def soak_shape(shape: str, args: argparse.Namespace) -> dict[str, Any]:
    with ExitStack() as stack:
        print(f"[{shape}] starting the servers", flush=True)
        servers, org, ports = start_servers(shape, args, stack)
        auth = f"Bearer {org['secretKey']}"
        api = stack.enter_context(
            httpx.Client(
                base_url=f"http://{HOST}:{ports['api']}", headers={"Authorization": auth}, timeout=60
            )
        )
        automations = create_automations(api)
        # The same probe with nothing else running first: what the machine gives today, for comparison.
        quiet = Probe(ports["api"], auth, args.probe_rate)
        quiet.start()
        time.sleep(args.baseline_seconds)
        quiet.stop.set()
        quiet.join(60)
        config = {
            "api_port": ports["api"],
            "intake_port": ports["intake"],
            "secret_key": org["secretKey"],
            "public_key": org["publicKey"],
            "tails": args.tails,
            "run_streams": args.run_streams,
            "batch": args.batch,
            "batches_per_second": args.batches_per_second,
            "api_per_second": args.api_per_second,
            "api_clients": 8,
        }
        streams = Child("streams", streams_main, config)
        stack.callback(streams.close)
        streams.receive(180)
        load = Child("load", load_main, config)
        stack.callback(load.close)
        load.receive(60)
        probe = Probe(ports["api"], auth, args.probe_rate)
        probe.start()
        stack.callback(probe.stop.set)
        duration = args.minutes * 60
        checkpoint_at = 0.2 * duration
        print(
            f"[{shape}] {args.tails} log tails and {args.run_streams} run streams open; soaking for "
            f"{args.minutes:g} min (memory checkpoint at {checkpoint_at / 60:.1f} min)",
            flush=True,
        )
        started = time.monotonic()
        cpu_before = cpu_seconds(servers)
        checkpoint: dict[str, float] | None = None
        memory: list[tuple[float, dict[str, float]]] = []
        while (elapsed := time.monotonic() - started) < duration:
            until_checkpoint = checkpoint_at - elapsed if checkpoint is None else duration
            time.sleep(max(0.0, min(5.0, duration - elapsed, until_checkpoint)))
            for server in servers:
                server.ensure_running()
            elapsed = time.monotonic() - started
            sample = rss_mib(servers)
            memory.append((round(elapsed, 1), sample))
            if checkpoint is None and elapsed >= checkpoint_at:
                checkpoint = sample
                print(f"[{shape}] {elapsed / 60:.1f} min: RSS {sample} MiB", flush=True)
        final = rss_mib(servers)
        cpu_share = {
            name: round((used - cpu_before[name]) / duration, 2)
            for name, used in cpu_seconds(servers).items()
        }
        print(f"[{shape}] end: RSS {final} MiB; stopping the load", flush=True)
        probe.stop.set()
        probe.join(60)
        loaded = load.ask("stop")
        acknowledged = int(loaded["acknowledged"])
        deadline = time.monotonic() + 30
        while True:  # the last records are on their way to the tails
            tail_records = streams.ask("count")["records"]
            if min(tail_records) >= acknowledged or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        streamed = streams.ask("stop")
        time.sleep(2)  # the automations' last runs (about a second each) end
        stored = count_logs(api)
        fired = automation_runs(api, automations)
        problems = {server.name: server.problems() for server in servers}
    assert checkpoint is not None
    return {
        "shape": shape,
        "duration_seconds": duration,
        "load": loaded,
        "streams": streamed,
        "tail_records_at_end": {"min": min(tail_records), "max": max(tail_records)},
        "acknowledged": acknowledged,
        "stored": stored,
        "automation_runs": fired,
        "probe": {**percentiles(probe.times), "failures": probe.failures[:20], "failed": len(probe.failures)},
        "probe_5xx": probe.status_5xx,
        "probe_without_load": {**percentiles(quiet.times), "failed": len(quiet.failures)},
        "server_cpu_share": cpu_share,  # cores used on average over the soak
        "machine_load_average": os.getloadavg(),
        "rss_checkpoint_mib": checkpoint,
        "rss_end_mib": final,
        "rss_samples": memory,
        "server_log_problems": {name: lines[:20] for name, lines in problems.items()},
        "server_log_problem_count": sum(len(lines) for lines in problems.values()),
    }


def criteria(result: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(criterion, figure, target, met) for one shape."""
    load_errors, load_5xx = _failures(result["load"]["tally"])
    stream_errors, stream_5xx = _failures(result["streams"]["tally"])
    probe_errors = result["probe"]["failed"]
    log_problems = result["server_log_problem_count"]
    automation_failed = sum(
        n
        for statuses in result["automation_runs"].values()
        for status, n in statuses.items()
        if status != "completed" and status not in ("queued", "running")
    )
    errors = load_errors + stream_errors + probe_errors + log_problems + automation_failed
    fivexx = load_5xx + stream_5xx + result["probe_5xx"]
    missing = result["acknowledged"] - result["stored"]
    missed_by_tail = result["acknowledged"] - result["tail_records_at_end"]["min"]
    before, after = sum(result["rss_checkpoint_mib"].values()), sum(result["rss_end_mib"].values())
    growth = (after - before) / before if before else 0.0
    fired = [sum(statuses.values()) for statuses in result["automation_runs"].values()]
    p99 = result["probe"]["p99"]
    minute = result["duration_seconds"] * 0.2 / 60
    quiet = result["probe_without_load"]
    return [
        (
            "errors",
            f"{errors} (load {load_errors}, streams {stream_errors}, probe {probe_errors}, "
            f"server logs {log_problems}, automation runs {automation_failed})",
            "0",
            errors == 0,
        ),
        ("5xx", str(fivexx), "0", fivexx == 0),
        (
            "acknowledged records missing",
            f"{missing} ({result['acknowledged']} acknowledged, {result['stored']} listed)",
            "0",
            missing == 0,
        ),
        ("records missed by a live tail", f"{missed_by_tail}", "0", missed_by_tail == 0),
        (
            "server RSS growth",
            f"{growth * 100:+.1f} % ({before:.0f} MiB at {minute:.1f} min, {after:.0f} MiB at the end)",
            f"< {RSS_GROWTH_TARGET * 100:g} %",
            growth < RSS_GROWTH_TARGET,
        ),
        (
            "GET /v1/me p99",
            f"{p99:.1f} ms (p50 {result['probe']['p50']:.1f}, max {result['probe']['max']:.1f}, "
            f"n {result['probe']['count']})",
            f"< {P99_TARGET_MS:g} ms",
            p99 < P99_TARGET_MS and result["probe"]["count"] > 0,
        ),
        (
            "  the same probe before the load",
            f"{quiet['p99']:.1f} ms (p50 {quiet['p50']:.1f}, n {quiet['count']})",
            INFORMATION,
            True,
        ),
        ("automations fired (schedule, log)", " / ".join(map(str, fired)), ">= 1 each", min(fired) >= 1),
    ]


def report(result: dict[str, Any]) -> str:
    rows = [
        [name, figure, target, "" if target == INFORMATION else "pass" if met else "FAIL"]
        for name, figure, target, met in criteria(result)
    ]
    load = result["load"]["tally"]["by_operation"]
    runs = result["streams"]["runs"]
    lines = [
        f"== {result['shape']} ({result['duration_seconds'] / 60:g} min) ==",
        format_table(["criterion", "figure", "target", "result"], rows),
        "",
        "load: " + ", ".join(f"{name} {count}" for name, count in sorted(load.items())),
        "runs followed by the run streams: " + ", ".join(f"{k} {v}" for k, v in sorted(runs.items())),
        "automation runs: "
        + "; ".join(
            ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "none"
            for statuses in result["automation_runs"].values()
        ),
        f"load achieved: {sum(load.values()) / result['duration_seconds']:.1f} requests/s "
        f"(intake batches included)",
        f"RSS MiB at the checkpoint {result['rss_checkpoint_mib']}, at the end {result['rss_end_mib']}",
        f"server CPU (cores, average) {result['server_cpu_share']}; machine load average at the end "
        + ", ".join(f"{x:.1f}" for x in result["machine_load_average"]),
    ]
    for part in ("load", "streams"):
        for sample in result[part]["tally"]["samples"][:5]:
            lines.append(f"  {part} failure: {sample}")
    for failure in result["probe"]["failures"][:5]:
        lines.append(f"  probe failure: {failure}")
    for name, problems in result["server_log_problems"].items():
        for line in problems[:5]:
            lines.append(f"  {name} log: {line[:300]}")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=10.0,
        help=f"per shape (1 to {MAX_MINUTES:g}: a schedule fires each minute)",
    )
    parser.add_argument("--shape", choices=(*SHAPES, "both"), default="both")
    parser.add_argument("--tails", type=int, default=150, help="live log tails held open")
    parser.add_argument("--run-streams", type=int, default=50, help="run streams held open (one run each)")
    parser.add_argument("--batch", type=int, default=50, help="records per intake batch")
    parser.add_argument("--batches-per-second", type=float, default=2.0)
    parser.add_argument("--api-per-second", type=float, default=40.0, help="API reads and writes a second")
    parser.add_argument("--probe-rate", type=float, default=20.0, help="GET /v1/me a second")
    parser.add_argument(
        "--baseline-seconds",
        type=float,
        default=15.0,
        help="the probe alone, before the load (for comparison)",
    )
    parser.add_argument("--pg-admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "soak.json")
    args = parser.parse_args()
    if not 1 <= args.minutes <= MAX_MINUTES:
        parser.error(f"--minutes must be between 1 and {MAX_MINUTES:g}")
    if not 1 <= args.baseline_seconds <= 120:
        parser.error("--baseline-seconds must be between 1 and 120")
    for name in ("tails", "run_streams", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    interrupt_on_sigterm()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    shapes = SHAPES if args.shape == "both" else (args.shape,)
    results: list[dict[str, Any]] = []
    try:
        for shape in shapes:
            results.append(soak_shape(shape, args))
    except (BenchError, OSError, EOFError, httpx.HTTPError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; servers stopped and temporary data removed", file=sys.stderr)
        return 130
    print()
    print("\n\n".join(report(result) for result in results))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    config = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.output.write_text(
        json.dumps({"timestamp": stamp, "config": config, "shapes": results}, indent=2) + "\n"
    )
    print(f"\nresults written to {args.output}")
    failed = [name for result in results for name, _f, _t, met in criteria(result) if not met]
    print("all criteria met" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
