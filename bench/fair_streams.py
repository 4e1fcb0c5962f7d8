"""One organization's live tails against another's requests: ``python bench/fair_streams.py``.

Organization A holds ``--tails`` (500) live tails (``GET /v1/logs/stream``) while ``--rate`` (50) records
a second arrive for it through the intake, one record per request (one commit each: the most wake-ups);
organization B meanwhile sends ``GET /v1/me`` at ``--probe-rate`` a second on one keep-alive connection,
and its latency is the figure. The baseline, in the same run on the same server, is the same: the same
intake load and the same probe, without the tails. Target (issue 25): B's p99 < 50 ms with the tails
held; the ratio to the baseline is printed too.

The tails are raw asyncio sockets in a process of their own (so reading 25,000 frames a second does not
slow the probe's client); each counts the records it received, and every tail must have received every
record sent while it was open, or the run fails: starving the tails would be no way to meet the target.
The server is ``threadline serve``, embedded SQLite (the default store process); both organizations' rate
limits are raised so that nothing is throttled. Bounded: two phases of ``--duration`` seconds, about a
minute in all.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import resource
import signal
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS_DIR,
    BenchError,
    Server,
    clean_env,
    format_table,
    free_port,
    ratio,
    run_checked,
    run_main,
    running_server,
)

HOST = "127.0.0.1"
RATE_LIMIT = 10_000_000
P99_TARGET_MS = 50.0
OPEN_TIMEOUT = 60.0


# ---------------------------------------------------------------------------------------------------------
# The tails, in a process of their own.


class _Tail(asyncio.Protocol):
    def __init__(self, request: bytes, opened: asyncio.Event) -> None:
        self.request = request
        self.opened = opened
        self.head = b""
        self.status_ok: bool | None = None
        self.records = 0
        self.carry = b""
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:  # uvloop's transports are not asyncio.Transport
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if self.status_ok is None:
            self.head += data
            if b"\r\n\r\n" not in self.head:
                return
            self.status_ok = self.head.startswith(b"HTTP/1.1 200")
            data = self.head.split(b"\r\n\r\n", 1)[1]
            self.opened.set()
        # A record's frame has one `data: ` line; the position frame and pings have none. A chunk may cut
        # the marker: five bytes carried over complete it, and cannot hold a whole one counted twice.
        text = self.carry + data
        self.records += text.count(b"data: ")
        self.carry = text[-5:]


async def _hold_tails(conn: Connection, port: int, auth: str, count: int) -> None:
    loop = asyncio.get_running_loop()
    request = (
        f"GET /v1/logs/stream HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {auth}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    tails: list[_Tail] = []
    for _ in range(count):
        opened = asyncio.Event()
        _, tail = await loop.create_connection(lambda o=opened: _Tail(request, o), HOST, port)
        tails.append(tail)
        await asyncio.wait_for(opened.wait(), OPEN_TIMEOUT)
        if not tail.status_ok:
            conn.send({"error": tail.head[:300].decode(errors="replace")})
            return
    conn.send({"opened": len(tails)})
    while True:
        command = await loop.run_in_executor(None, conn.recv)
        if command == "count":
            conn.send({"records": [tail.records for tail in tails]})
        else:
            for tail in tails:
                if tail.transport is not None:
                    tail.transport.close()
            conn.send({"closed": len(tails)})
            return


def _tails_main(conn: Connection, port: int, auth: str, count: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (harness.interrupt_on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # plain asyncio is slower but measures the same thing
        pass
    asyncio.run(_hold_tails(conn, port, auth, count))


class Tails:
    """``count`` open tails in a child process; ``records()`` per tail; closed on exit."""

    def __init__(self, port: int, auth: str, count: int) -> None:
        self.conn, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(
            target=_tails_main, args=(child, port, auth, count), daemon=True
        )
        self.process.start()
        if not self.conn.poll(OPEN_TIMEOUT + count * 0.2):
            raise BenchError("the tails did not open in time")
        answer = self.conn.recv()
        if "error" in answer:
            raise BenchError(f"a tail was refused: {answer['error']}")

    def records(self) -> list[int]:
        self.conn.send("count")
        counts: list[int] = self.conn.recv()["records"]
        return counts

    def close(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send("close")
                self.conn.poll(10)
            except (BrokenPipeError, OSError):
                pass
            self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(10)


# ---------------------------------------------------------------------------------------------------------
# The intake load and the probe.


class Intake(threading.Thread):
    """``rate`` single-record requests a second for organization A, on schedule whatever each takes (a
    slow answer must not lower the load), until stopped. ``sent`` counts the acknowledged ones."""

    def __init__(self, port: int, public_key: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.url = f"http://{HOST}:{port}/v1/logs"
        self.headers = {"x-service-key": public_key}
        self.rate = rate
        self.stop = threading.Event()
        self.sent = 0
        self.failed: list[str] = []

    def run(self) -> None:
        asyncio.run(self._send_all())

    async def _send_all(self) -> None:
        pending: set[asyncio.Task[None]] = set()
        async with httpx.AsyncClient(headers=self.headers, timeout=30) as http:
            started, scheduled = time.monotonic(), 0
            while not self.stop.is_set():
                delay = started + scheduled / self.rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(min(delay, 0.1))
                    continue
                task = asyncio.create_task(self._send(http, scheduled))
                pending.add(task)
                task.add_done_callback(pending.discard)
                scheduled += 1
            await asyncio.gather(*pending)

    async def _send(self, http: httpx.AsyncClient, number: int) -> None:
        response = await http.post(self.url, json={"message": f"bench record {number}"})
        if response.status_code == 202:
            self.sent += 1
        else:
            self.failed.append(f"{response.status_code} {response.text[:200]}")

    def finish(self) -> int:
        self.stop.set()
        self.join(60)
        if self.failed:
            raise BenchError(f"{len(self.failed)} intake requests failed, first: {self.failed[0]}")
        return self.sent


def probe(port: int, auth: str, rate: float, seconds: float) -> list[float]:
    """Milliseconds per ``GET /v1/me`` of organization B, paced at ``rate`` a second on one connection."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    times: list[float] = []
    started = time.monotonic()
    sent = 0
    try:
        while time.monotonic() - started < seconds:
            delay = started + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            began = time.perf_counter()
            conn.request("GET", "/v1/me", headers={"Authorization": auth})
            response = conn.getresponse()
            response.read()
            times.append((time.perf_counter() - began) * 1000)
            sent += 1
            if response.status != 200:
                raise BenchError(f"GET /v1/me answered {response.status}")
    finally:
        conn.close()
    return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"count": len(ordered), "p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": ordered[-1]}


def cpu_seconds(server: Server) -> float:
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def phase(
    server: Server, ports: dict[str, int], keys: dict[str, str], args: argparse.Namespace, tails: Tails | None
) -> dict[str, Any]:
    """The intake load, a warm-up, then the probe for ``--duration`` seconds; with tails, their counts."""
    before = tails.records() if tails is not None else None
    intake = Intake(ports["intake"], keys["a_public"], args.rate)
    cpu_before = cpu_seconds(server)
    intake.start()
    try:
        time.sleep(args.warmup)
        started = time.monotonic()
        cpu_probe = cpu_seconds(server)
        times = probe(ports["api"], keys["b_secret"], args.probe_rate, args.duration)
        elapsed = time.monotonic() - started
        cpu_used = cpu_seconds(server) - cpu_probe
    finally:
        sent = intake.finish()
    result: dict[str, Any] = {
        "me_ms": summary(times),
        "records_sent": sent,
        "server_cpu_share": round(cpu_used / elapsed, 3),
        "server_cpu_seconds": round(cpu_seconds(server) - cpu_before, 2),
    }
    if tails is not None and before is not None:
        deadline = time.monotonic() + 15
        while True:  # the last records are on their way: wait for every tail to have them all
            received = [after - first for after, first in zip(tails.records(), before, strict=True)]
            if min(received) >= sent or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        result["tail_records"] = {"min": min(received), "max": max(received), "expected": sent}
        if min(received) < sent or max(received) > sent:
            raise BenchError(f"tails received {min(received)}..{max(received)} records of {sent} sent")
    server.ensure_running()
    return result


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.tails + 100:
        raise BenchError(f"the open-file limit is {hard}; --tails {args.tails} needs more")
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-")))
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir))
    threadline = [sys.executable, "-m", "threadline"]
    a = json.loads(run_checked([*threadline, "init", "--json"], env))
    b = json.loads(run_checked([*threadline, "orgs", "create", "other", "--json"], env))
    for org in (a, b):
        org_id = org["organization"]["id"]
        run_checked([*threadline, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)
    keys = {
        "a_secret": f"Bearer {a['secretKey']}",
        "a_public": a["publicKey"],
        "b_secret": f"Bearer {b['secretKey']}",
    }
    ports = {"api": free_port(), "intake": free_port()}
    argv = [*threadline, "serve", "--port", str(ports["api"]), "--intake-port", str(ports["intake"])]
    server = stack.enter_context(
        running_server("threadline", argv, env, f"http://{HOST}:{ports['api']}/readyz", data_dir)
    )
    results: dict[str, Any] = {
        "benchmark": "fair streams",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    print(f"baseline: {args.rate:g} records/s for A, no tails; probing B for {args.duration:g} s", flush=True)
    results["baseline"] = phase(server, ports, keys, args, None)
    print(f"opening {args.tails} tails for A", flush=True)
    opened = time.monotonic()
    tails = Tails(ports["api"], keys["a_secret"], args.tails)
    stack.callback(tails.close)
    results["tails_open_seconds"] = round(time.monotonic() - opened, 2)
    print(f"with tails: {args.rate:g} records/s for A; probing B for {args.duration:g} s", flush=True)
    results["with_tails"] = phase(server, ports, keys, args, tails)
    results["problems"] = server.problems()
    return results


def report(results: dict[str, Any]) -> str:
    base, held = results["baseline"], results["with_tails"]
    received = held["tail_records"]
    rows = []
    for name, figures in (("no tails (baseline)", base), (f"{results['config']['tails']} tails", held)):
        me = figures["me_ms"]
        rows.append(
            [
                name,
                str(me["count"]),
                f"{me['p50']:.2f}",
                f"{me['p99']:.2f}",
                f"{me['max']:.2f}",
                str(figures["records_sent"]),
                f"{figures['server_cpu_share']:.2f}",
            ]
        )
    table = format_table(
        ["B's GET /v1/me", "n", "p50 ms", "p99 ms", "max ms", "A's records", "server CPU"], rows
    )
    p99_ratio = ratio(held["me_ms"]["p99"], base["me_ms"]["p99"])
    met = held["me_ms"]["p99"] < P99_TARGET_MS
    lines = [
        table,
        "",
        f"tails opened in {results['tails_open_seconds']} s; each got {received['min']}..{received['max']}"
        f" of the {received['expected']} records sent while they were open",
        f"p99 with tails / baseline: {p99_ratio:.2f}" if p99_ratio is not None else "p99 ratio: n/a",
        f"target: B's p99 < {P99_TARGET_MS:g} ms with the tails held: {'met' if met else 'NOT met'} "
        f"({held['me_ms']['p99']:.2f} ms)",
    ]
    if results["problems"]:
        lines.append(f"server log problems: {len(results['problems'])} (see the JSON)")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tails", type=int, default=500, help="live tails held by organization A")
    parser.add_argument("--rate", type=float, default=50.0, help="records a second for A (one per request)")
    parser.add_argument("--probe-rate", type=float, default=100.0, help="GET /v1/me a second for B")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds probed per phase")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before probing")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "fair_streams.json")
    return parser.parse_args()


def main() -> int:
    return run_main(parse_args(), benchmark, report, (OSError, EOFError))


if __name__ == "__main__":
    sys.exit(main())
