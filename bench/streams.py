"""Benchmark run streams (SSE) against a bare sse-starlette endpoint: ``python bench/streams.py``.

Three measurements, each on Threadline (``threadline serve``, embedded SQLite, runs executing in the server
process, model ``offline/scripted``) and on ``bench/baseline_sse.py`` (sse-starlette on the same uvicorn
stack, events in memory) in the same run:

1. event latency, persisted to received: K clients (``--clients``, default 1, 100 and 1,000) stream one run
   that then produces ``--events`` text chunks ``--interval-ms`` apart; each client stamps every frame when
   it arrives and subtracts the event's ``createdAt`` (stamped on the server just before the commit, so
   the commit is inside the figure). ``createdAt`` carries milliseconds, truncated, on both sides:
   latencies are biased up by 0.5 ms on average, identically for both.
2. first event: from sending ``POST /v1/threads/{id}/runs`` to the run's first frame (``run_started``) on
   a stream opened right after the POST answered; the POST, the stream's opening and when the event was
   made (its ``createdAt``) are reported too.
3. stream tokens: 1-client event latency (run stream) and first event (thread stream, the token minted
   before the clock) with ``?token=st_…`` beside the secret key, on the same server, alternating; ratios.
4. idle streams: streams opened on one long-running run, ``--idle-step`` at a time up to ``--idle-max``,
   with the server's resident memory (``VmRSS``) after each step and ``/readyz`` (baseline ``/healthz``)
   answer times while they are held; streams per 512 MiB are extrapolated from the fitted RSS line. Then
   all are closed and as many opened again: RSS growing again would mean streams leak.

Targets (from the issues): first event p50 <= 4x and p99 <= 6x the bare baseline's first-event p50 in the
same run (issue 37: a ratio holds on any machine; it replaced "< 20 ms"); event latency p99 < 5 ms with 1
client and < 50 ms with 1,000; >= 10,000 idle streams per process (in 512 MiB). Clients are raw asyncio
sockets on uvloop in ``--client-procs`` processes; their CPU use and event-loop lag are reported with each
figure, as are the server's CPU use and the pace the run actually kept, because on a 2-core machine the
clients compete with the server. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import platform
import re
import resource
import signal
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS_DIR,
    BenchError,
    Server,
    baseline_argv,
    clean_env,
    format_table,
    free_port,
    ratio,
    run_checked,
    run_main,
    running_server,
)

HOST = "127.0.0.1"
STREAM_LIMIT = 1_000_000
RATE_LIMIT = 10_000_000
MIB = 1024 * 1024
MEMORY_BUDGET = 512 * MIB
# Ours against the baseline's first-event p50 of the same run: (our percentile, at most this many times).
FIRST_EVENT_RATIOS = {"p50": 4.0, "p99": 6.0}
LATENCY_P99_MS = {1: 5.0, 1000: 50.0}
IDLE_STREAMS = 10_000
OPEN_TIMEOUT = 60.0
# A complete event frame: its data line and the blank line ending it (the JSON never holds a raw newline).
# Chunked transfer-encoding lines sit between frames, never inside one: each write carries whole frames.
_FRAME = re.compile(rb"data: (\{[^\n]*\})\n\n")
_DONE = b"data: [DONE]"
# A long-running run, for idle streams and as the blocker a measured run waits behind (#delay is capped
# at 60 s per delta; these runs are cancelled at the end).
_LONG_INPUT = "#notools #chunks=100 #delay=60000"


# ---------------------------------------------------------------------------------------------------------
# Client processes: asyncio protocols on uvloop, about as cheap per read as Python gets. A recording client
# keeps (arrival time, bytes) and parses only once the run has ended, so parsing never delays a time stamp.


class _Client(asyncio.Protocol):
    def __init__(self, request: bytes, record: bool, loop: asyncio.AbstractEventLoop) -> None:
        self.request = request
        self.record = record
        self.head = b""
        self.tail = b""
        self.chunks: list[tuple[float, bytes]] = []
        self.headers: asyncio.Future[int] = loop.create_future()
        self.done: asyncio.Future[str] = loop.create_future()
        self.transport: Any = None  # uvloop's transports are no asyncio.Transport subclasses

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.time()
        if not self.headers.done():
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            status = self.head[9:12]
            data, self.head = self.head[end + 4 :], b""
            self.headers.set_result(int(status) if status.isdigit() else 0)
        if self.record and data:
            self.chunks.append((now, data))
            if not self.done.done() and _DONE in self.tail + data:
                self.done.set_result("done")
            self.tail = data[-16:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.headers.done():
            self.headers.set_exception(ConnectionError(f"closed before the headers ({exc})"))
        if not self.done.done():
            self.done.set_result("lost")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted values."""
    if not ordered:
        raise BenchError("no measurements to summarise")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _summary(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": _percentile(ordered, 50),
        "p90": _percentile(ordered, 90),
        "p99": _percentile(ordered, 99),
        "p99_9": _percentile(ordered, 99.9),
        "max": ordered[-1],
    }


def _analyse(client: _Client, expected_chunks: int, created: dict[str, float]) -> tuple[list[float], str]:
    """Latencies (ms) of the client's text chunks, and what was wrong with its stream ("" if nothing)."""
    problem = "" if client.done.done() and client.done.result() == "done" else "no [DONE]"
    latencies: list[float] = []
    expected_seq = 1
    buffer = b""
    for arrived, data in client.chunks:
        buffer = buffer + data if buffer else data
        end = 0
        for match in _FRAME.finditer(buffer):
            end = match.end()
            event = json.loads(match.group(1))
            seq = int(event["cursor"].rsplit(".", 1)[1])
            if seq != expected_seq and not problem:
                problem = f"event {expected_seq} missing or out of order"
            expected_seq = seq + 1
            if event["type"] == "text_chunk":
                stamp = event["createdAt"]
                at = created.get(stamp)
                if at is None:
                    at = created[stamp] = datetime.fromisoformat(stamp).timestamp()
                latencies.append((arrived - at) * 1000)
        buffer = buffer[end:]
    if len(latencies) != expected_chunks and not problem:
        problem = f"{len(latencies)} of {expected_chunks} text chunks"
    return latencies, problem


class _Worker:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.clients: list[_Client] = []
        self.lags: list[float] = []
        self.monitor: asyncio.Task[None] | None = None
        self.cpu0 = self.wall0 = 0.0

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        commands: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def readable() -> None:
            try:
                commands.put_nowait(self.conn.recv())
            except (EOFError, OSError):  # the bench process is gone: stop
                loop.remove_reader(self.conn.fileno())
                commands.put_nowait(None)

        loop.add_reader(self.conn.fileno(), readable)
        try:
            while (command := await commands.get()) is not None and command[0] != "exit":
                name, arguments = command
                try:
                    reply: tuple[str, Any] = ("ok", await getattr(self, f"do_{name}")(**arguments))
                except Exception as error:
                    reply = ("error", f"{type(error).__name__}: {error}")
                os.set_blocking(self.conn.fileno(), True)  # the loop's reader made it non-blocking
                self.conn.send(reply)
        finally:
            await self.do_close_all()

    async def do_open(
        self, port: int, path: str, headers: dict[str, str], count: int, record: bool
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        lines = [f"GET {path} HTTP/1.1", f"Host: {HOST}:{port}", "Accept: text/event-stream"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode()
        gate = asyncio.Semaphore(200)  # well within the server's listen backlog
        failures: Counter[str] = Counter()
        opened: list[_Client] = []

        async def one() -> None:
            async with gate:
                client = _Client(request, record, loop)
                try:
                    await loop.create_connection(lambda: client, HOST, port)
                    async with asyncio.timeout(OPEN_TIMEOUT):
                        status = await client.headers
                except (OSError, TimeoutError) as error:
                    failures[f"{type(error).__name__}: {str(error)[:80]}"] += 1
                    client.close()
                    return
                if status != 200:
                    failures[f"HTTP {status}"] += 1
                    client.close()
                    return
                opened.append(client)

        await asyncio.gather(*(one() for _ in range(count)))
        self.clients.extend(opened)
        return {"opened": len(opened), "failures": dict(failures)}

    async def do_arm(self) -> None:
        """Start the clocks for CPU use and loop lag: the run is about to start."""
        self.lags = []
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()

        async def monitor() -> None:
            while True:
                started = time.perf_counter()
                await asyncio.sleep(0.002)
                self.lags.append((time.perf_counter() - started - 0.002) * 1000)

        self.monitor = asyncio.create_task(monitor())

    async def do_collect(self, expected_chunks: int, wait_seconds: float) -> dict[str, Any]:
        recording = [client for client in self.clients if client.record]
        if recording:
            await asyncio.wait([client.done for client in recording], timeout=wait_seconds)
        wall, cpu = time.perf_counter() - self.wall0, time.process_time() - self.cpu0
        if self.monitor is not None:
            self.monitor.cancel()
            self.monitor = None
        created: dict[str, float] = {}
        latencies: list[float] = []
        problems: Counter[str] = Counter()
        for client in recording:
            found, problem = _analyse(client, expected_chunks, created)
            latencies += found
            if problem:
                problems[problem] += 1
        return {
            "clients": len(recording),
            "incomplete": dict(problems),
            "latencies_ms": latencies,
            "created": [min(created.values()), max(created.values())] if created else None,
            "cpu_seconds": cpu,
            "wall_seconds": wall,
            "lags_ms": self.lags,
        }

    async def do_close_all(self) -> int:
        closed = len(self.clients)
        for client in self.clients:
            client.close()
        self.clients = []
        await asyncio.sleep(0)
        return closed


def _worker_main(conn: Connection) -> None:
    import uvloop

    # The bench process decides when we stop (a terminal's Ctrl-C reaches the whole process group).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise_fd_limit()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_Worker(conn).serve())


class ClientWorkers:
    """Client processes, each driving its share of the connections; always stopped on the way out."""

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes: list[Connection] = []
        self.processes: list[multiprocessing.process.BaseProcess] = []
        try:
            for number in range(count):
                parent, child = context.Pipe()
                process = context.Process(target=_worker_main, args=(child,), name=f"sse-client-{number}")
                process.daemon = True
                process.start()
                child.close()
                self.pipes.append(parent)
                self.processes.append(process)
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> ClientWorkers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def call(self, command: str, arguments: Sequence[dict[str, Any]], wait_seconds: float) -> list[Any]:
        """The same command to every worker (each with its arguments); their replies in order."""
        for pipe, args in zip(self.pipes, arguments, strict=True):
            pipe.send((command, args))
        deadline = time.monotonic() + wait_seconds
        replies = []
        for number, pipe in enumerate(self.pipes):
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise BenchError(
                    f"client process {number} did not answer {command!r} in {wait_seconds:.0f} s"
                )
            status, value = pipe.recv()
            if status != "ok":
                raise BenchError(f"client process {number} failed {command!r}: {value}")
            replies.append(value)
        return replies

    def each(self, command: str, reply_within: float, **arguments: Any) -> list[Any]:
        return self.call(command, [arguments] * len(self.pipes), reply_within)

    def open(self, port: int, path: str, headers: dict[str, str], count: int, record: bool) -> dict[str, Any]:
        """Opens ``count`` streams spread over the workers; returns once each has its headers (or failed)."""
        share, rest = divmod(count, len(self.pipes))
        arguments = [
            {"port": port, "path": path, "headers": headers, "count": share + (i < rest), "record": record}
            for i in range(len(self.pipes))
        ]
        replies = self.call("open", arguments, OPEN_TIMEOUT + 60)
        failures: Counter[str] = Counter()
        for reply in replies:
            failures.update(reply["failures"])
        return {
            "opened": sum(reply["opened"] for reply in replies),
            "failed": sum(failures.values()),
            "failures": dict(failures),
        }

    def close_all(self) -> int:
        return sum(self.each("close_all", 120))

    def stop(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError, ValueError):
                pipe.send(("exit", {}))
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        for pipe in self.pipes:
            pipe.close()


def raise_fd_limit() -> int:
    """Thousands of sockets per process: the soft limit up to the hard one (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return soft


# ---------------------------------------------------------------------------------------------------------
# The two targets behind one interface: how to make a run, start it, stream it, end it.


class Target:
    def __init__(self, name: str, server: Server, port: int, auth: dict[str, str], probe_path: str) -> None:
        self.name = name
        self.server = server
        self.port = port
        self.auth = auth
        self.probe_path = probe_path
        self.http = httpx.Client(base_url=f"http://{HOST}:{port}", headers=auth, timeout=30)

    def close(self) -> None:
        self.http.close()

    def post(self, path: str, **kwargs: Any) -> Any:
        response = self.http.post(path, **kwargs)
        if response.status_code not in (200, 201):
            raise BenchError(
                f"{self.name}: POST {path} answered {response.status_code}: {response.text[:300]}"
            )
        return response.json()

    def _proc(self, name: str) -> str:
        self.server.ensure_running()
        return Path(f"/proc/{self.server.process.pid}/{name}").read_text()

    def rss(self) -> int:
        """Resident memory of the server process in bytes (uvicorn and `threadline serve` fork nothing)."""
        for line in self._proc("status").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise BenchError(f"no VmRSS for {self.name}")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process, all its threads."""
        fields = self._proc("stat").rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def probe(self, count: int = 5) -> list[float]:
        """Milliseconds per health answer, on one keep-alive connection."""
        times = []
        for _ in range(count):
            started = time.perf_counter()
            response = self.http.get(self.probe_path)
            times.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise BenchError(f"{self.name}: {self.probe_path} answered {response.status_code}")
        return times

    def pending_run(self, events: int, interval_ms: int) -> tuple[str, str]:
        """A run that produces ``events`` chunks ``interval_ms`` apart once started: (stream path, handle)."""
        raise NotImplementedError

    def start(self, handle: str) -> None:
        raise NotImplementedError

    def long_run(self) -> tuple[str, str]:
        """A run that stays open and quiet: (stream path, handle for ``end``)."""
        raise NotImplementedError

    def end(self, handle: str) -> None:
        raise NotImplementedError

    def prepare_quick_run(self) -> str:
        """What a quick run needs before the clock starts (a thread)."""
        return ""

    def quick_run(self, prepared: str) -> str:
        """Create a short run (which starts it); its stream path."""
        raise NotImplementedError


class Ours(Target):
    def thread(self) -> str:
        return str(self.post("/v1/threads", json={})["id"])

    def pending_run(self, events: int, interval_ms: int) -> tuple[str, str]:
        # A run's first event is made as soon as an executor claims it, so the measured run is queued
        # behind a long one on the same thread; cancelling that one starts it.
        thread = self.thread()
        blocker = self.post(f"/v1/threads/{thread}/runs", json={"input": _LONG_INPUT})["id"]
        run = self.post(
            f"/v1/threads/{thread}/runs",
            json={"input": f"#notools #chunks={events} #delay={interval_ms}", "multitaskStrategy": "enqueue"},
        )
        if run["status"] != "queued":
            raise BenchError(f"the measured run is {run['status']}, expected queued")
        return f"/v1/runs/{run['id']}/stream", blocker

    def start(self, handle: str) -> None:
        self.post(f"/v1/runs/{handle}/cancel")

    def long_run(self) -> tuple[str, str]:
        run = self.post(f"/v1/threads/{self.thread()}/runs", json={"input": _LONG_INPUT})["id"]
        return f"/v1/runs/{run}/stream", run

    def end(self, handle: str) -> None:
        self.post(f"/v1/runs/{handle}/cancel")

    def prepare_quick_run(self) -> str:
        return self.thread()

    def quick_run(self, prepared: str) -> str:
        run = self.post(f"/v1/threads/{prepared}/runs", json={"input": "#notools #chunks=1"})
        return f"/v1/runs/{run['id']}/stream"


class KeyOnThread(Ours):
    """First event on the thread's stream with the secret key: what ``WithToken`` is compared against (a
    thread token is minted before the clock starts, when the run's id is not known yet)."""

    def quick_run(self, prepared: str) -> str:
        self.post(f"/v1/threads/{prepared}/runs", json={"input": "#notools #chunks=1"})
        return f"/v1/threads/{prepared}/stream"


class WithToken(Ours):
    """The same server and runs, the streams opened as a browser would: no header, ``?token=st_…`` minted
    (with the secret key, before the clock starts) for the run or the thread."""

    def __init__(self, name: str, server: Server, port: int, auth: dict[str, str], probe_path: str) -> None:
        super().__init__(name, server, port, auth, probe_path)
        self.auth = {}  # the streams carry no header; the key stays on self.http, for minting

    def _token(self, stream: str) -> str:
        return str(self.post(f"{stream}/stream-tokens", json={"ttlSeconds": 600})["token"])

    def pending_run(self, events: int, interval_ms: int) -> tuple[str, str]:
        path, handle = super().pending_run(events, interval_ms)
        return f"{path}?token={self._token(path.removesuffix('/stream'))}", handle

    def prepare_quick_run(self) -> str:
        thread = self.thread()
        return f"{thread} {self._token(f'/v1/threads/{thread}')}"

    def quick_run(self, prepared: str) -> str:
        thread, token = prepared.split(" ")
        self.post(f"/v1/threads/{thread}/runs", json={"input": "#notools #chunks=1"})
        return f"/v1/threads/{thread}/stream?token={token}"


class Baseline(Target):
    def pending_run(self, events: int, interval_ms: int) -> tuple[str, str]:
        run = self.post("/runs", params={"n": events, "delay_ms": interval_ms, "start": "false"})["id"]
        return f"/runs/{run}/stream", run

    def start(self, handle: str) -> None:
        self.post(f"/runs/{handle}/start")

    def long_run(self) -> tuple[str, str]:
        run = self.post("/runs", params={"n": 100, "delay_ms": 60_000})["id"]
        return f"/runs/{run}/stream", run

    def end(self, handle: str) -> None:
        self.post(f"/runs/{handle}/cancel")

    def quick_run(self, prepared: str) -> str:
        return f"/runs/{self.post('/runs', params={'n': 1, 'delay_ms': 0})['id']}/stream"


# ---------------------------------------------------------------------------------------------------------
# Measurements


def measure_latency(
    target: Target, workers: ClientWorkers, clients: int, events: int, interval_ms: int
) -> dict[str, Any]:
    path, handle = target.pending_run(events, interval_ms)
    started = time.perf_counter()
    opened = workers.open(target.port, path, target.auth, clients, record=True)
    open_seconds = time.perf_counter() - started
    if opened["failed"]:
        workers.close_all()
        raise BenchError(
            f"{target.name}: {opened['failed']} of {clients} streams failed: {opened['failures']}"
        )
    time.sleep(0.5)  # every stream has its headers; let each reach its wait on the run
    workers.each("arm", 30)
    server_cpu = target.cpu_seconds()
    target.start(handle)
    wait_seconds = 60 + events * interval_ms / 1000 * 10
    replies = workers.each("collect", wait_seconds + 60, expected_chunks=events, wait_seconds=wait_seconds)
    server_cpu = target.cpu_seconds() - server_cpu
    workers.close_all()
    problems: Counter[str] = Counter()
    for reply in replies:
        problems.update(reply["incomplete"])
    if problems:
        raise BenchError(f"{target.name}, {clients} clients: streams incomplete: {dict(problems)}")
    active = [reply for reply in replies if reply["clients"]]
    lags = sorted(value for reply in active for value in reply["lags_ms"])
    stream_seconds = max(reply["wall_seconds"] for reply in active)
    first_made = min(reply["created"][0] for reply in active)
    last_made = max(reply["created"][1] for reply in active)
    return {
        "clients": clients,
        "events": events,
        "interval_ms": interval_ms,
        "open_seconds": open_seconds,
        "latency_ms": _summary([value for reply in active for value in reply["latencies_ms"]]),
        # The pace the run kept: a saturated event loop slows the producer, so it can be far below 1/interval.
        "events_per_second": (events - 1) / (last_made - first_made) if last_made > first_made else None,
        "stream_seconds": stream_seconds,
        "server_cpu_share": server_cpu / stream_seconds,
        "server_cpu_ms_per_event": server_cpu / events * 1000,
        "server_cpu_us_per_delivery": server_cpu / (clients * events) * 1e6,
        "client": {
            "processes": len(active),
            "cpu_share_max": max(reply["cpu_seconds"] / reply["wall_seconds"] for reply in active),
            "loop_lag_ms": {"p50": _percentile(lags, 50), "p99": _percentile(lags, 99), "max": lags[-1]},
        },
    }


def _stream_until_done(port: int, path: str, auth: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """Open a stream on a blocking socket: (headers at, first frame at, its event); then read to [DONE], so
    no run of ours is still going when the next measurement starts."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {HOST}:{port}", "Accept: text/event-stream"]
    lines += [f"{name}: {value}" for name, value in auth.items()]
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        buffer = b""
        headers_at = first_at = 0.0
        first: dict[str, Any] = {}
        while True:
            data = sock.recv(65536)
            now = time.perf_counter()
            if not data:
                raise BenchError(f"stream {path} closed before [DONE]")
            buffer += data
            if not headers_at:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    continue
                if buffer[9:12] != b"200":
                    raise BenchError(f"stream {path} answered {buffer[:12]!r}")
                headers_at, buffer = now, buffer[end + 4 :]
            if not first_at and (match := _FRAME.search(buffer)):
                first_at, first = now, json.loads(match.group(1))
            if first_at and _DONE in buffer:
                return headers_at, first_at, first


def measure_first_event(targets: Sequence[Target], repetitions: int, warmup: int) -> dict[str, Any]:
    """Alternating the targets run by run, so both see the same disturbances."""
    parts = ("total", "made", "post", "open", "first_after_open")
    samples = {target.name: {part: [] for part in parts} for target in targets}
    for number in range(warmup + repetitions):
        for target in targets:
            prepared = target.prepare_quick_run()
            wall, started = time.time(), time.perf_counter()
            path = target.quick_run(prepared)
            opening = time.perf_counter()
            headers_at, first_at, first = _stream_until_done(target.port, path, target.auth)
            if first["type"] != "run_started":
                raise BenchError(f"{target.name}: the first event was {first['type']}, expected run_started")
            if number >= warmup:
                sample = samples[target.name]
                sample["total"].append((first_at - started) * 1000)
                sample["made"].append((datetime.fromisoformat(first["createdAt"]).timestamp() - wall) * 1000)
                sample["post"].append((opening - started) * 1000)
                sample["open"].append((headers_at - opening) * 1000)
                sample["first_after_open"].append((first_at - headers_at) * 1000)
    return {
        name: {part: _summary(values) for part, values in by_part.items()}
        for name, by_part in samples.items()
    }


def measure_tokens(
    ours: Ours, workers: ClientWorkers, rounds: int, repetitions: int, events: int, interval_ms: int
) -> dict[str, Any]:
    """A stream token against the secret key on the same server, alternating: 1-client event latency on a
    run's stream, and first event on a thread's stream (where a token can be minted before the run)."""
    keyed = KeyOnThread("key", ours.server, ours.port, ours.auth, ours.probe_path)
    token = WithToken("token", ours.server, ours.port, ours.auth, ours.probe_path)
    try:
        latency: dict[str, list[dict[str, Any]]] = {"key": [], "token": []}
        for number in range(rounds):
            for target in (ours, token) if number % 2 == 0 else (token, ours):
                measured = measure_latency(target, workers, 1, events, interval_ms)
                latency["key" if target is ours else "token"].append(measured)
                print(
                    f"latency  1 client  {target.name:<10} (key vs token)"
                    f"  p99 {measured['latency_ms']['p99']:7.2f} ms",
                    file=sys.stderr,
                )
        return {"latency": latency, "first_event": measure_first_event((keyed, token), repetitions, warmup=5)}
    finally:
        keyed.close()
        token.close()


def _fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares line through (streams, rss): (bytes per stream, intercept)."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    if sxx == 0:
        raise BenchError("not enough idle-stream steps to fit a line (raise --idle-max or lower --idle-step)")
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    return slope, mean_y - slope * mean_x


def measure_idle(
    target: Target, workers: ClientWorkers, maximum: int, step: int, settle: float
) -> dict[str, Any]:
    path, handle = target.long_run()
    # Warm the stream path up (first-use imports, caches) before taking the base.
    workers.open(target.port, path, target.auth, 1, record=False)
    workers.close_all()
    time.sleep(settle)
    steps = [{"streams": 0, "rss": target.rss(), "probe_ms": target.probe(), "open_seconds": 0.0}]
    held = 0
    stop_reason = f"reached --idle-max {maximum}"
    try:
        while held < maximum:
            count = min(step, maximum - held)
            started = time.perf_counter()
            opened = workers.open(target.port, path, target.auth, count, record=False)
            open_seconds = time.perf_counter() - started
            held += opened["opened"]
            time.sleep(settle)
            steps.append(
                {
                    "streams": held,
                    "rss": target.rss(),
                    "probe_ms": target.probe(),
                    "open_seconds": open_seconds,
                }
            )
            print(
                f"idle  {target.name:<10}  {held:>6} streams  rss {steps[-1]['rss'] / MIB:7.1f} MiB"
                f"  opened in {open_seconds:5.2f} s  probe max {max(steps[-1]['probe_ms']):6.1f} ms",
                file=sys.stderr,
            )
            if opened["failed"]:
                stop_reason = f"{opened['failed']} of {count} streams failed: {opened['failures']}"
                break
    finally:
        workers.close_all()
    # Leak check: with every stream closed, open as many again. Freed memory is reused (RSS rarely shrinks),
    # so RSS should stay near its peak; growing by another ramp's worth would mean streams are kept.
    time.sleep(max(settle, 1.0))
    after_close = {"rss": target.rss(), "probe_ms": target.probe()}
    reopened = workers.open(target.port, path, target.auth, held, record=False)
    time.sleep(settle)
    again = {"streams": reopened["opened"], "failed": reopened["failed"], "rss": target.rss()}
    workers.close_all()
    target.end(handle)
    slope, intercept = _fit(
        [(s["streams"], s["rss"]) for s in steps[1:]]
        if len(steps) > 2
        else [(s["streams"], s["rss"]) for s in steps]
    )
    peak = steps[-1]
    return {
        "max_streams_held": held,
        "stop_reason": stop_reason,
        "base_rss": steps[0]["rss"],
        "peak_rss": peak["rss"],
        "bytes_per_stream": slope,
        "fit_intercept": intercept,
        "streams_per_512_mib": (MEMORY_BUDGET - intercept) / slope if slope > 0 else math.inf,
        "held_within_512_mib": max((s["streams"] for s in steps if s["rss"] <= MEMORY_BUDGET), default=0),
        "probe_ms_at_max": _summary(peak["probe_ms"]),
        "after_close": after_close,
        "reopened": again,
        "steps": steps,
    }


def measure_fsync(directory: Path, count: int = 200) -> dict[str, float]:
    """What one durable commit costs on this disk at least: 4 KiB written and fsync'd, in the data dir.
    Our events are committed (SQLite, synchronous=FULL) between their createdAt and their delivery."""
    path = directory / "fsync-probe"
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for _ in range(count):
            os.write(fd, b"x" * 4096)
            started = time.perf_counter()
            os.fsync(fd)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    return _summary(times)


# ---------------------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--clients", default="1,100,1000", help="client counts for event latency")
    parser.add_argument("--events", type=int, default=300, help="text chunks per measured run")
    parser.add_argument("--interval-ms", type=int, default=10, help="ms between chunks (the model's #delay)")
    parser.add_argument("--rounds", type=int, default=1, help="latency runs per client count and target")
    parser.add_argument("--first-event", type=int, default=50, help="first-event runs per target")
    parser.add_argument("--idle-max", type=int, default=12_000, help="idle streams to ramp up to")
    parser.add_argument("--idle-step", type=int, default=1000, help="idle streams opened per step")
    parser.add_argument("--settle", type=float, default=0.5, help="seconds between an idle step and its RSS")
    parser.add_argument("--client-procs", type=int, default=2, help="client processes")
    parser.add_argument(
        "--tmp-dir",
        type=Path,
        default=None,
        help="where the temporary data dir goes (e.g. /dev/shm: no disk)",
    )
    parser.add_argument("--skip", default="", help="comma-separated: latency, first-event, token, idle")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "streams.json", help="results JSON file")
    args = parser.parse_args()
    try:
        args.clients = [int(c) for c in args.clients.split(",") if c.strip()]
    except ValueError:
        parser.error("--clients is a comma-separated list of integers")
    args.skip = sorted({s.strip() for s in args.skip.split(",") if s.strip()})
    if set(args.skip) - {"latency", "first-event", "token", "idle"}:
        parser.error("--skip takes latency, first-event, token, idle")
    if (
        not args.clients
        or min(args.clients) < 1
        or args.events < 1
        or args.interval_ms < 0
        or args.rounds < 1
    ):
        parser.error("--clients, --events and --rounds must be >= 1, --interval-ms >= 0")
    if min(args.idle_max, args.idle_step, args.client_procs, args.first_event) < 1:
        parser.error("--idle-max, --idle-step, --client-procs and --first-event must be >= 1")
    return args


def start_servers(
    stack: ExitStack, data_dir: Path, env: dict[str, str], auth: dict[str, str], phase: str
) -> tuple[Ours, Baseline]:
    port, intake_port, baseline_port = free_port(), free_port(), free_port()
    ours_server = stack.enter_context(
        running_server(
            f"threadline-{phase}",
            [
                sys.executable,
                "-m",
                "threadline",
                "serve",
                "--port",
                str(port),
                "--intake-port",
                str(intake_port),
            ],
            env,
            f"http://{HOST}:{port}/readyz",
            data_dir,
        )
    )
    baseline_server = stack.enter_context(
        running_server(
            f"baseline-sse-{phase}",
            baseline_argv("baseline_sse", baseline_port),
            clean_env(),
            f"http://{HOST}:{baseline_port}/healthz",
            data_dir,
        )
    )
    ours = Ours("threadline", ours_server, port, auth, "/readyz")
    baseline = Baseline("baseline", baseline_server, baseline_port, {}, "/healthz")
    stack.callback(ours.close)
    stack.callback(baseline.close)
    return ours, baseline


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    began = time.monotonic()
    fd_limit = raise_fd_limit()
    if "idle" not in args.skip and fd_limit < args.idle_max + 200:
        raise BenchError(f"the open-file limit is {fd_limit}; --idle-max {args.idle_max} needs more")
    data_dir = Path(
        stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-", dir=args.tmp_dir))
    )
    env = clean_env(THREADLINE_DATA_DIR=str(data_dir))
    threadline = [sys.executable, "-m", "threadline"]
    init = json.loads(run_checked([*threadline, "init", "--json"], env))
    org_id = init["organization"]["id"]
    # The per-process stream cap (500 by default) would refuse the 1,000-client and idle phases: the
    # benchmark measures streams, not the cap, so it is raised with the rate limit.
    limits = ["--requests-per-minute", str(RATE_LIMIT), "--streams", str(STREAM_LIMIT)]
    run_checked([*threadline, "orgs", "set-limit", org_id, *limits], env)
    auth = {"Authorization": f"Bearer {init['secretKey']}"}
    workers = stack.enter_context(ClientWorkers(args.client_procs))

    results: dict[str, Any] = {
        "benchmark": "run streams (SSE)",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "fd_limit": fd_limit,
        },
        "targets": {
            "first_event_vs_baseline_p50": FIRST_EVENT_RATIOS,
            "latency_p99_ms": LATENCY_P99_MS,
            "idle_streams_per_512_mib": IDLE_STREAMS,
        },
        "note": "createdAt has millisecond precision (truncated) on both targets; latencies carry that "
        "quantization (+0.5 ms on average)",
        "disk_fsync_ms": measure_fsync(data_dir),
        "server_log_errors": {},
    }

    # Phase 1: latency and first event, on one pair of servers.
    if not {"latency", "first-event", "token"} <= set(args.skip):
        with ExitStack() as phase:
            ours, baseline = start_servers(phase, data_dir, env, auth, "latency")
            if "latency" not in args.skip:
                latency: dict[str, dict[str, list[dict[str, Any]]]] = {}
                for clients in args.clients:
                    latency[str(clients)] = {"threadline": [], "baseline": []}
                    for number in range(args.rounds):
                        for target in (ours, baseline) if number % 2 == 0 else (baseline, ours):
                            measured = measure_latency(
                                target, workers, clients, args.events, args.interval_ms
                            )
                            latency[str(clients)][target.name].append(measured)
                            summary = measured["latency_ms"]
                            print(
                                f"latency  {clients:>5} clients  {target.name:<10}"
                                f"  p50 {summary['p50']:7.2f} ms  p99 {summary['p99']:7.2f} ms"
                                f"  {measured['events_per_second']:5.1f} events/s"
                                f"  server cpu {measured['server_cpu_share']:.0%}",
                                file=sys.stderr,
                            )
                results["latency"] = latency
            if "first-event" not in args.skip:
                results["first_event"] = measure_first_event((ours, baseline), args.first_event, warmup=5)
            if "token" not in args.skip:
                results["tokens"] = measure_tokens(
                    ours, workers, args.rounds * 2, args.first_event, args.events, args.interval_ms
                )
            for target in (ours, baseline):
                results["server_log_errors"][target.server.name] = target.server.problems()

    # Phase 2: idle streams, on fresh servers, so memory freed by phase 1 cannot hide what streams cost.
    if "idle" not in args.skip:
        with ExitStack() as phase:
            ours, baseline = start_servers(phase, data_dir, env, auth, "idle")
            results["idle"] = {
                target.name: measure_idle(target, workers, args.idle_max, args.idle_step, args.settle)
                for target in (ours, baseline)
            }
            for target in (ours, baseline):
                results["server_log_errors"][target.server.name] = target.server.problems()

    for name, lines in results["server_log_errors"].items():
        if lines:
            print(f"warning: {name} logged {len(lines)} error line(s), first: {lines[0]}", file=sys.stderr)
    results["seconds"] = time.monotonic() - began
    return results


# ---------------------------------------------------------------------------------------------------------
# Report


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median p99 (all its figures come from the same round)."""
    return sorted(runs, key=lambda run: run["latency_ms"]["p99"])[len(runs) // 2]


def _latency_report(latency: dict[str, Any], goals: list[tuple[str, bool]]) -> str:
    rows, conditions = [], []
    for clients, targets in latency.items():
        ours, base = _median_run(targets["threadline"]), _median_run(targets["baseline"])
        o, b = ours["latency_ms"], base["latency_ms"]
        rows.append(
            [
                clients,
                _f(o["p50"]),
                _f(o["p99"]),
                _f(b["p50"]),
                _f(b["p99"]),
                _f(ratio(o["p50"], b["p50"])),
                _f(ratio(o["p99"], b["p99"])),
            ]
        )
        conditions.append(
            [
                clients,
                _f(ours["events_per_second"], 1),
                _f(base["events_per_second"], 1),
                f"{ours['server_cpu_share']:.0%}",
                f"{base['server_cpu_share']:.0%}",
                _f(ours["server_cpu_ms_per_event"]),
                _f(base["server_cpu_ms_per_event"]),
                f"{max(ours['client']['cpu_share_max'], base['client']['cpu_share_max']):.0%}",
                _f(max(ours["client"]["loop_lag_ms"]["p99"], base["client"]["loop_lag_ms"]["p99"])),
            ]
        )
        limit = LATENCY_P99_MS.get(int(clients))
        if limit is not None:
            goals.append(
                (
                    f"event latency p99 < {limit:g} ms at {clients} client(s): {o['p99']:.2f} ms",
                    o["p99"] < limit,
                )
            )
    first = next(iter(latency.values()))["threadline"][0]
    return (
        f"Event latency, createdAt (stamped just before the commit) -> received, text_chunk events, ms\n"
        f"({first['events']} events per run, requested {first['interval_ms']} ms apart; createdAt is "
        "truncated to ms on both sides, so both carry +0.5 ms on average)\n"
        + format_table(
            ["clients", "ours p50", "ours p99", "sse p50", "sse p99", "p50 ratio", "p99 ratio"], rows
        )
        + "\n\nConditions of those runs: the pace each run kept (events/s), server CPU (share of one core, "
        "and CPU ms per event, all clients), client processes' CPU (max) and event-loop lag (p99, ms)\n"
        + format_table(
            [
                "clients",
                "ours ev/s",
                "sse ev/s",
                "ours cpu",
                "sse cpu",
                "ours ms/event",
                "sse ms/event",
                "client cpu",
                "client lag p99",
            ],
            conditions,
        )
    )


def _first_event_report(first: dict[str, Any], goals: list[tuple[str, bool]]) -> str:
    rows = []
    labels = {
        "total": "POST sent -> first event",
        "made": "  run_started made (createdAt)",
        "post": "  POST answered",
        "open": "  stream opened (headers)",
        "first_after_open": "  first frame after headers",
    }
    for part, label in labels.items():
        o, b = first["threadline"][part], first["baseline"][part]
        # The baseline's run_started is there before its stream opens: a ratio of that part means nothing.
        compared = part != "first_after_open"
        rows.append(
            [
                label,
                _f(o["p50"]),
                _f(o["p99"]),
                _f(b["p50"]),
                _f(b["p99"]),
                _f(ratio(o["p50"], b["p50"]) if compared else None),
                _f(ratio(o["p99"], b["p99"]) if compared else None),
            ]
        )
    total, bare = first["threadline"]["total"], first["baseline"]["total"]["p50"]
    for key, limit in FIRST_EVENT_RATIOS.items():
        times = ratio(total[key], bare)
        goals.append(
            (
                f"first event {key} <= {limit:g}x the baseline's p50: {total[key]:.2f} ms, "
                f"{_f(times)}x of {bare:.2f} ms",
                times is not None and times <= limit,
            )
        )
    return f"First event ({total['count']} runs per target, alternating; ms)\n" + format_table(
        ["", "ours p50", "ours p99", "sse p50", "sse p99", "p50 ratio", "p99 ratio"], rows
    )


def _token_report(tokens: dict[str, Any]) -> str:
    rows = []
    key, token = _median_run(tokens["latency"]["key"]), _median_run(tokens["latency"]["token"])
    for part in ("p50", "p99"):
        o, t = key["latency_ms"][part], token["latency_ms"][part]
        rows.append([f"event latency {part}, 1 client (run stream)", _f(o), _f(t), _f(ratio(t, o))])
    first = tokens["first_event"]
    for part, label in (("total", "POST sent -> first event"), ("open", "  stream opened (headers)")):
        for key_name in ("p50", "p99"):
            o, t = first["key"][part][key_name], first["token"][part][key_name]
            rows.append([f"{label} {key_name} (thread stream)", _f(o), _f(t), _f(ratio(t, o))])
    rounds = len(tokens["latency"]["key"])
    return (
        f"Stream token vs secret key, same server ({rounds} latency rounds each, median round; first event "
        f"{first['key']['total']['count']} runs each; alternating; ms)\n"
        + format_table(["", "key", "token", "ratio token/key"], rows)
    )


def _idle_report(idle: dict[str, Any], goals: list[tuple[str, bool]]) -> str:
    rows = []
    for name, label in (("threadline", "ours"), ("baseline", "sse-starlette")):
        i = idle[name]
        rows.append(
            [
                label,
                str(i["max_streams_held"]),
                _f(i["base_rss"] / MIB, 1),
                _f(i["peak_rss"] / MIB, 1),
                _f(i["bytes_per_stream"] / 1024),
                f"{i['streams_per_512_mib']:.0f}",
                str(i["held_within_512_mib"]),
                f"{i['probe_ms_at_max']['p50']:.1f} / {i['probe_ms_at_max']['max']:.1f}",
                _f(i["after_close"]["rss"] / MIB, 1),
                f"{i['reopened']['streams']}: {i['reopened']['rss'] / MIB:.1f}",
            ]
        )
    ours, base = idle["threadline"], idle["baseline"]
    goals.append(
        (
            f">= {IDLE_STREAMS:,} idle streams per process in 512 MiB: {ours['streams_per_512_mib']:,.0f}",
            ours["streams_per_512_mib"] >= IDLE_STREAMS,
        )
    )
    return (
        "Idle streams on one run, one process (RSS in MiB; streams per 512 MiB from the line fitted to the "
        "steps' RSS; probe: /readyz, baseline /healthz, while all are held)\n"
        + format_table(
            [
                "",
                "held",
                "rss at 0",
                "rss at max",
                "KiB/stream",
                "per 512 MiB",
                "held <= 512 MiB",
                "probe p50/max ms",
                "rss closed",
                "reopened: rss",
            ],
            rows,
        )
        + f"\nratio ours/sse-starlette, streams per 512 MiB: "
        f"{_f(ratio(ours['streams_per_512_mib'], base['streams_per_512_mib']))}"
        + f"\nstopped: ours: {ours['stop_reason']}; sse-starlette: {base['stop_reason']}"
    )


def report(results: dict[str, Any]) -> str:
    goals: list[tuple[str, bool]] = []
    parts = []
    if "latency" in results:
        parts.append(_latency_report(results["latency"], goals))
    if "first_event" in results:
        parts.append(_first_event_report(results["first_event"], goals))
    if "tokens" in results:
        parts.append(_token_report(results["tokens"]))
    if "idle" in results:
        parts.append(_idle_report(results["idle"], goals))
    fsync = results["disk_fsync_ms"]
    parts.append(
        f"disk: 4 KiB write + fsync in the data dir: p50 {fsync['p50']:.2f} ms, p99 {fsync['p99']:.2f} ms, "
        f"max {fsync['max']:.2f} ms (ours commits every event batch with synchronous=FULL)"
    )
    parts.append("\n".join(f"target: {text} -> {'MET' if met else 'NOT MET'}" for text, met in goals))
    parts.append(f"took {results['seconds']:.0f} s")
    return "\n\n".join(parts)


def main() -> int:
    args = parse_args()
    return run_main(args, benchmark, report, (OSError, EOFError))


if __name__ == "__main__":
    sys.exit(main())
