"""The soak's servers and what it measures of them (``bench/soak.py`` runs the soak): the shapes' servers
started and stopped, their memory and CPU from /proc, the ``GET /v1/me`` probe, and the reads at the end
(every log record, every automation run)."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from harness import (
    BenchError,
    Server,
    clean_env,
    free_port,
    postgres_database,
    run_checked,
    running_server,
    stop_process,
)
from soak_clients import ALERT

HOST = "127.0.0.1"
RATE_LIMIT = 10_000_000

# ---------------------------------------------------------------------------------------------------------
# Server memory and the probe.


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pids(server: Server, tree: dict[int, list[int]]) -> list[int]:
    """The server's process and its descendants (the SQLite log store process of ``serve``)."""
    found, pending = [], [server.process.pid]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(tree.get(pid, []))
    return found


def rss_mib(servers: list[Server]) -> dict[str, float]:
    """RSS per server, its descendants included, in MiB."""
    tree = _children()
    return {s.name: round(sum(_rss_kib(pid) for pid in _pids(s, tree)) / 1024, 1) for s in servers}


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_seconds(servers: list[Server]) -> dict[str, float]:
    """User and system CPU time per server, its descendants that are still running included."""
    tree, tick = _children(), os.sysconf("SC_CLK_TCK")
    return {s.name: sum(_cpu_ticks(pid) for pid in _pids(s, tree)) / tick for s in servers}


class Probe(threading.Thread):
    """``GET /v1/me`` at ``rate`` a second on one keep-alive connection (reopened if the server closes
    it), on schedule; milliseconds per answer, and every non-200 or failure."""

    def __init__(self, port: int, auth: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.port, self.auth, self.rate = port, auth, rate
        self.stop = threading.Event()
        self.times: list[float] = []
        self.failures: list[str] = []
        self.status_5xx = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        started, sent = time.monotonic(), 0
        try:
            while not self.stop.is_set():
                delay = started + sent / self.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sent += 1
                began = time.perf_counter()
                try:
                    conn.request("GET", "/v1/me", headers={"Authorization": self.auth})
                    response = conn.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException) as error:
                    conn.close()  # an idle close between two requests; counted, then reopened
                    self.failures.append(repr(error))
                    continue
                self.times.append((time.perf_counter() - began) * 1000)
                if response.status != 200:
                    self.status_5xx += response.status >= 500
                    self.failures.append(f"GET /v1/me answered {response.status}")
        finally:
            conn.close()


def percentiles(times: list[float]) -> dict[str, float]:
    if not times:
        return {"count": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(times)

    def pct(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"count": len(ordered), "p50": pct(0.50), "p99": pct(0.99), "max": round(ordered[-1], 2)}


# ---------------------------------------------------------------------------------------------------------
# Servers.


def start_servers(
    shape: str, args: argparse.Namespace, stack: ExitStack
) -> tuple[list[Server], dict[str, Any], dict[str, int]]:
    """The shape's servers, ready, with the organization ``init`` made (limits raised so that nothing is
    throttled: the soak measures errors, not the rate limiter)."""
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"threadline-soak-{shape}-")))
    extra = {"THREADLINE_DATA_DIR": str(data_dir)}
    if shape == "distributed":
        extra["THREADLINE_DATABASE_URL"] = stack.enter_context(postgres_database(args.pg_admin_url, "soak"))
        prefix = f"soak{os.getpid()}{secrets.token_hex(3)}:"
        extra |= {"THREADLINE_REDIS_URL": args.redis_url, "THREADLINE_REDIS_PREFIX": prefix}
        stack.callback(_delete_redis_keys, args.redis_url, prefix)
    env = clean_env(**extra)
    threadline = [sys.executable, "-m", "threadline"]
    org = json.loads(run_checked([*threadline, "init", "--json"], env))
    org_id = org["organization"]["id"]
    limits = ["--requests-per-minute", str(RATE_LIMIT), "--concurrent-runs", "16"]
    run_checked([*threadline, "orgs", "set-limit", org_id, *limits], env)
    ports = {"api": free_port(), "intake": free_port()}
    argv = [*threadline, "serve", "--port", str(ports["api"]), "--intake-port", str(ports["intake"])]
    ready = f"http://{HOST}:{ports['api']}/readyz"
    servers = [stack.enter_context(running_server("serve", argv, env, ready, data_dir))]
    if shape == "distributed":
        for number in (1, 2):
            servers.append(
                stack.enter_context(running_worker(f"worker{number}", [*threadline, "worker"], env, data_dir))
            )
    return servers, org, ports


@contextmanager
def running_worker(name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> Iterator[Server]:
    """A ``threadline worker``: no HTTP to wait on, so ready once it has run 1.5 s without exiting;
    stopped (SIGTERM, then SIGKILL) on every exit path."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        server = Server(name, process, log_path)
        time.sleep(1.5)
        server.ensure_running()
        yield server
    finally:
        stop_process(process)


def _delete_redis_keys(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    except redis.RedisError as error:
        print(f"warning: could not delete the Redis keys {prefix}*: {error}", file=sys.stderr)
    finally:
        client.close()


def create_automations(api: httpx.Client) -> list[str]:
    bodies = [
        {
            "name": "soak schedule",
            "trigger": {"type": "schedule", "cron": "* * * * *"},
            "action": {"prompt": "scheduled soak check #notools #chunks=20"},
        },
        {
            "name": "soak log trigger",
            "trigger": {"type": "log", "level": "error", "contains": ALERT, "cooldownSeconds": 10},
            "action": {"prompt": "look at this alert #notools #chunks=20"},
        },
    ]
    ids = []
    for body in bodies:
        response = api.post("/v1/automations", json=body)
        if response.status_code != 201:
            raise BenchError(f"creating an automation answered {response.status_code}: {response.text}")
        ids.append(response.json()["id"])
    return ids


def _pages(api: httpx.Client, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        response = api.get(path, params=params)
        if response.status_code != 200:
            raise BenchError(f"GET {path} answered {response.status_code}: {response.text[:300]}")
        page = response.json()
        items.extend(page["data"])
        cursor = page["nextCursor"]
        if cursor is None:
            return items


def automation_runs(api: httpx.Client, ids: list[str]) -> dict[str, dict[str, int]]:
    """Per automation, its runs by status: each firing made a thread (metadata ``automationId``)."""
    found: dict[str, dict[str, int]] = {automation: {} for automation in ids}
    for thread in _pages(api, "/v1/threads"):
        automation = thread["metadata"].get("automationId")
        if automation not in found:
            continue
        for run in _pages(api, f"/v1/threads/{thread['id']}/runs"):
            found[automation][run["status"]] = found[automation].get(run["status"], 0) + 1
    return found


def count_logs(api: httpx.Client) -> int:
    """Every record ``GET /v1/logs`` returns, page after page."""
    return len(_pages(api, "/v1/logs"))
