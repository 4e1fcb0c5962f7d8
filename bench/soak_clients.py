"""The soak's clients, each in a process of its own (``bench/soak.py`` starts them): the load (intake batches,
API reads and writes, automation runs now and then) and the open streams (log tails and run streams).

Each client process runs one asyncio loop until the parent sends ``"stop"`` on its pipe, then answers
with its tallies. A tally counts every request by outcome: ``ok``, ``http_5xx``, ``http_other`` (a 4xx
the soak did not expect, 429 included: the soak raises its organization's limits so that nothing is
throttled), ``transport`` (no answer). Every unexpected outcome is also kept as a sample for the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import httpx
from fair_streams import _Tail as CountingTail

HOST = "127.0.0.1"
OPEN_TIMEOUT = 60.0
# The run a run stream follows: an answer of 20 words, 250 ms apart (about 5 s), no tools. With the
# organization's 16 runs executing at once, most run streams wait on a queued run: open, and quiet.
RUN_INPUT = "soak run #notools #chunks=20 #delay=250"
ALERT = "soak-alert"  # the text the soak's log trigger matches


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)

    def note(self, operation: str, outcome: str, detail: str = "") -> None:
        self.outcomes[outcome] += 1
        self.by_operation[operation] += 1
        if outcome != "ok" and len(self.samples) < 20:
            self.samples.append(f"{operation}: {outcome} {detail}"[:400])

    def check(self, operation: str, response: httpx.Response, *expected: int) -> bool:
        if response.status_code in expected:
            self.note(operation, "ok")
            return True
        outcome = "http_5xx" if response.status_code >= 500 else "http_other"
        self.note(operation, outcome, f"{response.status_code} {response.text[:200]}")
        return False

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcomes": dict(self.outcomes),
            "by_operation": dict(self.by_operation),
            "samples": self.samples,
        }


def _child_setup() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (harness.interrupt_on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()


async def _wait_for_stop(conn: Connection) -> None:
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, conn.recv) != "stop":
        pass


# ---------------------------------------------------------------------------------------------------------
# The load: intake batches, API reads and writes.


class Load:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.tally = Tally()
        self.acknowledged = 0  # records the intake answered 202 for
        self.alerts = 0  # of them, records the log trigger matches
        self.threads: list[str] = []

    async def intake(self, http: httpx.AsyncClient, stop: asyncio.Event) -> None:
        """A batch of ``batch`` records every ``1 / batches_per_second`` s, on schedule; one batch in
        twenty carries an error record the log trigger matches."""
        url = f"http://{HOST}:{self.config['intake_port']}/v1/logs"
        headers = {"x-service-key": self.config["public_key"]}
        rate, size = self.config["batches_per_second"], self.config["batch"]
        started, number = time.monotonic(), 0
        pending: set[asyncio.Task[None]] = set()
        levels = ("debug", "info", "info", "info", "warn")

        async def send(number: int) -> None:
            records: list[dict[str, Any]] = [
                {
                    "message": f"soak batch {number} record {i} user{random.randrange(1000)} checkout",
                    "level": levels[i % len(levels)],
                    "attributes": {"batch": number, "i": i, "region": random.choice(("eu", "us", "ap"))},
                }
                for i in range(size)
            ]
            alert = number % 20 == 0
            if alert:
                records[-1] = {"message": f"{ALERT}: payment failed in batch {number}", "level": "error"}
            try:
                response = await http.post(url, json=records, headers=headers)
            except httpx.HTTPError as error:
                self.tally.note("intake", "transport", repr(error))
                return
            if self.tally.check("intake", response, 202):
                self.acknowledged += int(response.json()["accepted"])
                self.alerts += int(alert)

        while not stop.is_set():
            delay = started + number / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(min(delay, 0.1))
                continue
            task = asyncio.create_task(send(number))
            pending.add(task)
            task.add_done_callback(pending.discard)
            number += 1
        await asyncio.gather(*pending)

    async def api(self, http: httpx.AsyncClient, stop: asyncio.Event, worker: int) -> None:
        """One API client: ``api_per_second`` / ``api_clients`` operations a second, of a fixed mix."""
        rate = self.config["api_per_second"] / self.config["api_clients"]
        started, number = time.monotonic(), 0
        while not stop.is_set():
            delay = started + number / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(min(delay, 0.1))
                continue
            number += 1
            try:
                await self.operation(http, worker * 1_000_000 + number)
            except httpx.HTTPError as error:
                self.tally.note("api", "transport", repr(error))

    async def operation(self, http: httpx.AsyncClient, number: int) -> None:
        kind = number % 10
        if kind == 0 or not self.threads:
            response = await http.post(
                "/v1/threads", json={"title": f"soak {number}", "metadata": {"n": "1"}}
            )
            if self.tally.check("threads.create", response, 201):
                self.threads.append(response.json()["id"])
                if len(self.threads) > 200:  # keep the working set bounded: delete the oldest
                    oldest = self.threads.pop(0)
                    deleted = await http.delete(f"/v1/threads/{oldest}")
                    self.tally.check("threads.delete", deleted, 200, 204)
            return
        thread = random.choice(self.threads)
        if kind in (1, 2):
            body = {"content": f"message {number} about checkout and payments", "role": "user"}
            response = await http.post(f"/v1/threads/{thread}/messages", json=body)
            self.tally.check("messages.create", response, 201, 404)  # 404: deleted meanwhile
        elif kind == 3:
            self.tally.check("messages.list", await http.get(f"/v1/threads/{thread}/messages"), 200, 404)
        elif kind == 4:
            self.tally.check("threads.list", await http.get("/v1/threads", params={"limit": 20}), 200)
        elif kind == 5:
            response = await http.get("/v1/search/messages", params={"q": "checkout", "limit": 10})
            self.tally.check("search.messages", response, 200)
        elif kind == 6:
            response = await http.get("/v1/logs", params={"limit": 50, "level": "warn"})
            self.tally.check("logs.list", response, 200)
        elif kind == 7:
            response = await http.patch(f"/v1/threads/{thread}", json={"title": f"soak {number} renamed"})
            self.tally.check("threads.update", response, 200, 404)
        elif kind == 8:
            self.tally.check("settings.get", await http.get("/v1/settings"), 200)
        else:
            self.tally.check("threads.get", await http.get(f"/v1/threads/{thread}"), 200, 404)


async def _load_main(conn: Connection, config: dict[str, Any]) -> None:
    load = Load(config)
    stop = asyncio.Event()
    headers = {"Authorization": f"Bearer {config['secret_key']}"}
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    base = f"http://{HOST}:{config['api_port']}"
    async with (
        httpx.AsyncClient(base_url=base, headers=headers, timeout=30, limits=limits) as api,
        httpx.AsyncClient(timeout=30, limits=limits) as intake,
    ):
        tasks = [asyncio.create_task(load.intake(intake, stop))]
        tasks += [asyncio.create_task(load.api(api, stop, i)) for i in range(config["api_clients"])]
        conn.send({"ready": True})
        await _wait_for_stop(conn)
        stop.set()
        await asyncio.gather(*tasks)
    conn.send({"tally": load.tally.as_dict(), "acknowledged": load.acknowledged, "alerts": load.alerts})


def load_main(conn: Connection, config: dict[str, Any]) -> None:
    _child_setup()
    asyncio.run(_load_main(conn, config))


# ---------------------------------------------------------------------------------------------------------
# The streams: log tails (raw sockets: they read every record) and run streams (one run after another).


class _Tail(CountingTail):
    """bench/fair_streams.py's live tail (it counts its record frames), which also notes whether the server
    closed it: a tail ends only when the soak closes it."""

    def __init__(self, request: bytes, opened: asyncio.Event) -> None:
        super().__init__(request, opened)
        self.closed_by_server = False
        self.closing = False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closing:
            self.closed_by_server = True
        self.opened.set()


async def _run_stream_slot(
    http: httpx.AsyncClient, stop: asyncio.Event, tally: Tally, runs: Counter[str]
) -> None:
    """One open run stream at all times: a run started, its stream read to ``[DONE]``, then the next."""
    response = await http.post("/v1/threads", json={"title": "soak run stream"})
    if not tally.check("threads.create", response, 201):
        return
    thread = response.json()["id"]
    while not stop.is_set():
        try:
            started = await http.post(
                f"/v1/threads/{thread}/runs", json={"input": RUN_INPUT, "multitaskStrategy": "enqueue"}
            )
            if not tally.check("runs.create", started, 201):
                await asyncio.sleep(1)
                continue
            run = started.json()["id"]
            status = None
            async with http.stream("GET", f"/v1/runs/{run}/stream", timeout=120) as stream:
                if not tally.check("runs.stream", stream, 200):
                    await stream.aread()
                    continue
                async for line in stream.aiter_lines():
                    if line.startswith("data: {"):
                        event = json.loads(line[6:])
                        if event["type"] == "run_completed":
                            status = event["status"]
            runs[status or "no run_completed"] += 1
            if status != "completed":
                tally.note("runs.result", "run_not_completed", f"{run}: {status}")
        except httpx.HTTPError as error:
            tally.note("runs.stream", "transport", repr(error))


async def _streams_main(conn: Connection, config: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    tally = Tally()
    auth = f"Bearer {config['secret_key']}"
    request = (
        f"GET /v1/logs/stream HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {auth}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    tails: list[_Tail] = []
    for _ in range(config["tails"]):
        opened = asyncio.Event()
        _, tail = await loop.create_connection(
            lambda o=opened: _Tail(request, o),
            HOST,
            config["api_port"],  # type: ignore[misc]
        )
        await asyncio.wait_for(opened.wait(), OPEN_TIMEOUT)
        if not tail.status_ok:
            conn.send({"error": f"a log tail was refused: {tail.head[:300].decode(errors='replace')}"})
            return
        tails.append(tail)
    stop = asyncio.Event()
    runs: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=config["run_streams"] + 8)
    async with httpx.AsyncClient(
        base_url=f"http://{HOST}:{config['api_port']}",
        headers={"Authorization": auth},
        timeout=30,
        limits=limits,
    ) as http:
        slots = [
            asyncio.create_task(_run_stream_slot(http, stop, tally, runs))
            for _ in range(config["run_streams"])
        ]
        conn.send({"ready": True})
        while True:
            command = await loop.run_in_executor(None, conn.recv)
            if command == "count":
                conn.send({"records": [t.records for t in tails]})
            elif command == "stop":
                break
        stop.set()  # each slot finishes the run it follows, then stops
        await asyncio.wait_for(asyncio.gather(*slots), 120)
    for tail in tails:
        tail.closing = True
        if tail.transport is not None:
            tail.transport.close()
    dropped = sum(t.closed_by_server for t in tails)
    if dropped:
        tally.outcomes["tail_closed_by_server"] += dropped
        tally.samples.append(f"{dropped} log tails were closed by the server")
    conn.send({"tally": tally.as_dict(), "runs": dict(runs), "records": [t.records for t in tails]})


def streams_main(conn: Connection, config: dict[str, Any]) -> None:
    _child_setup()
    asyncio.run(_streams_main(conn, config))
