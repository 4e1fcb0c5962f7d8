"""CPU per ``GET /v1/me`` with metrics on and off, in one process: ``python bench/metrics_cpu.py``.

``bench/me.py`` measures the same thing over HTTP with wrk, which is the figure that counts, but on a shared
2-core machine its rounds move by more than metrics cost. Here two API apps (``THREADLINE_METRICS`` true and
false) on one database answer requests driven straight through ASGI, in alternating rounds, and the
process's CPU time per request is compared: what counting adds, without sockets, HTTP parsing or the
machine's other work in the figure. The ratio is an upper bound of the slowdown: over HTTP each request also
pays uvicorn's parsing, which metrics do not touch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from harness import clean_env

from threadline.app import create_app
from threadline.config import Settings


async def request(app: Any, authorization: bytes) -> None:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/v1/me",
        "raw_path": b"/v1/me",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"bench"), (b"authorization", authorization)],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    if statuses != [200]:
        raise SystemExit(f"GET /v1/me answered {statuses}")


async def measure(data_dir: Path, authorization: bytes, rounds: int, requests: int) -> dict[str, list[float]]:
    per_request: dict[str, list[float]] = {"on": [], "off": []}
    async with AsyncExitStack() as stack:
        apps = {}
        for name, on in (("on", True), ("off", False)):
            settings = Settings(data_dir=data_dir, metrics=on, default_rate_limit_per_minute=100_000_000)
            app = create_app(settings, chores=False)
            await stack.enter_async_context(app.router.lifespan_context(app))
            apps[name] = app
        for _ in range(rounds):
            for name, app in apps.items():
                for _ in range(200):  # warm
                    await request(app, authorization)
                started = time.process_time()
                for _ in range(requests):
                    await request(app, authorization)
                per_request[name].append((time.process_time() - started) / requests * 1e6)
    return per_request


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=3000, help="requests per app per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="threadline-bench-metrics-") as directory:
        env = clean_env(THREADLINE_DATA_DIR=directory)
        done = subprocess.run(
            [sys.executable, "-m", "threadline", "init", "--json"], env=env, capture_output=True, check=True
        )
        authorization = f"Bearer {json.loads(done.stdout)['secretKey']}".encode()
        results = asyncio.run(measure(Path(directory), authorization, args.rounds, args.requests))
    on, off = statistics.median(results["on"]), statistics.median(results["off"])
    print(f"metrics on : {on:.1f} us CPU per request (median of {args.rounds} rounds)")
    print(f"metrics off: {off:.1f} us CPU per request")
    print(f"on/off requests per CPU second: {off / on:.3f} (target >= 0.85)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
