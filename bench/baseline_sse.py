"""The bare sse-starlette baseline for ``bench/streams.py``: in-memory "runs" broadcast to their streams.

What the framework alone costs: no authentication, no database, no persistence. A run is a list of
events in memory; each stream keeps its position in that list and waits on an ``asyncio.Event`` that is
replaced (and the old one set) whenever an event is added, so a thousand streams cost one list and one
wake-up each per event, as Threadline's own feeds do. Each event is rendered once (its JSON is built
when it is made, with the same fields and sizes as a Threadline ``text_chunk``) and each stream yields
it through ``sse_starlette.EventSourceResponse``, which encodes and sends it per client: that per-client
cost is the framework's.

``createdAt`` is stamped when the event is made, in the same ISO 8601 format as Threadline's
(``2026-11-21T11:42:15.473Z``): UTC, milliseconds, truncated, so both sides carry the same quantization.

- ``POST /runs?n=N&delay_ms=D&start=true|false`` creates a run (``{"id": ...}``). Started, it makes a
  ``run_started`` event at once, then ``N`` ``text_chunk`` events each ``D`` ms apart, then
  ``run_completed``; streams then end with ``data: [DONE]``.
- ``POST /runs/{id}/start`` starts a created run; ``POST /runs/{id}/cancel`` ends it at once.
- ``GET /runs/{id}/stream`` streams the run's events from its first (a stream opened late replays).
- ``GET /healthz`` for readiness.

Started by ``bench/streams.py`` with the same uvicorn options as the other baselines.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from fastapi import FastAPI, HTTPException
from sse_starlette import EventSourceResponse, ServerSentEvent

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

# sep="\n" everywhere: the same framing as Threadline's frames (sse-starlette's default is CRLF).
_SEP = "\n"
_DONE = ServerSentEvent(data="[DONE]", sep=_SEP)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _token(prefix: str) -> str:
    # The same length as Threadline's ids (prefix + 26 characters), so frames have the same size.
    return prefix + secrets.token_hex(13)


class _Run:
    def __init__(self, n: int, delay_ms: int) -> None:
        self.id = _token("run_")
        self.thread_id = _token("thr_")
        self.message_id = _token("msg_")
        self.n = n
        self.delay = delay_ms / 1000
        self.events: list[ServerSentEvent] = []
        self.done = False
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def add(self, type_: str, **payload: object) -> None:
        seq = len(self.events) + 1
        cursor = f"{self.id}.{seq}"
        data = {
            "type": type_,
            "cursor": cursor,
            "runId": self.id,
            "threadId": self.thread_id,
            "createdAt": _now(),
            **payload,
        }
        self.events.append(ServerSentEvent(json.dumps(data, separators=(",", ":")), id=cursor, sep=_SEP))
        if type_ == "run_completed":
            self.done = True
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._produce())

    async def _produce(self) -> None:
        """Events ``delay`` apart on the wall clock. A plain ``sleep(delay)`` after each fan-out does not
        keep that pace on uvloop: libuv measures a timer from the loop time it cached before the fan-out's
        work, so each sleep lasts ``delay`` plus that work (measured: 15 ms instead of 10 at 100 clients;
        Threadline's model is not affected, its fan-out runs after the commit, in another loop iteration).
        Deadlines keep the pace; when the loop cannot, the run slows down rather than bursting."""
        self.add("run_started", model="offline/scripted")
        due = time.monotonic()
        for i in range(1, self.n + 1):
            due = max(due + self.delay, time.monotonic())
            await asyncio.sleep(due - time.monotonic())
            self.add(
                "text_chunk", messageId=self.message_id, delta=f"word{i} " if i < self.n else f"word{i}."
            )
        self.add("run_completed", status="completed", usage={"inputTokens": 0, "outputTokens": self.n})

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if not self.done:
            self.add("run_completed", status="cancelled", usage={"inputTokens": 0, "outputTokens": 0})

    async def stream(self) -> AsyncIterator[ServerSentEvent]:
        position = 0
        while True:
            if position < len(self.events):
                position += 1
                yield self.events[position - 1]
                continue
            if self.done:
                yield _DONE
                return
            await self.changed.wait()


_RUNS: dict[str, _Run] = {}


def _run(run_id: str) -> _Run:
    run = _RUNS.get(run_id)
    if run is None:
        raise HTTPException(404, "no such run")
    return run


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/runs", status_code=201)
async def create_run(n: int = 300, delay_ms: int = 10, start: bool = True) -> dict[str, str]:
    run = _Run(n, delay_ms)
    _RUNS[run.id] = run
    if start:
        run.start()
    return {"id": run.id}


@app.post("/runs/{run_id}/start")
async def start_run(run_id: str) -> dict[str, str]:
    _run(run_id).start()
    return {"id": run_id}


@app.post("/runs/{run_id}/cancel")
async def cancel_run(run_id: str) -> dict[str, str]:
    _run(run_id).cancel()
    return {"id": run_id}


@app.get("/runs/{run_id}/stream")
async def stream_run(run_id: str) -> EventSourceResponse:
    return EventSourceResponse(_run(run_id).stream(), sep=_SEP)
