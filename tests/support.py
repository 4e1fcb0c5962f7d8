"""Helpers for tests: tenants made straight through the services, and real server processes."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from threadline.provisioning import NewOrganization, create_organization
from threadline.runtime import Services


@dataclass(frozen=True)
class Tenant:
    created: NewOrganization

    @property
    def org_id(self) -> str:
        return self.created.organization.id

    @property
    def project_id(self) -> str:
        return self.created.project.id

    @property
    def secret(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.created.secret_value}"}

    @property
    def public(self) -> dict[str, str]:
        return {"x-service-key": self.created.public_value}


async def make_tenant(services: Services, name: str) -> Tenant:
    async with services.db.transaction() as conn:
        created = await create_organization(conn, name, now=services.clock.now())
    return Tenant(created)


def assert_error(
    response: httpx.Response,
    status: int,
    code: str,
    *,
    operation_id: str,
    reason: str | None = None,
    missing: list[str] | None = None,
) -> dict[str, object]:
    """The error body every failure shares, checked field by field (a reason or missing context the test
    does not name must be absent); the body, for what a test checks further."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code
    assert body["operationId"] == operation_id
    assert body["missingContext"] == (missing or [])
    assert body.get("reason") == reason
    assert isinstance(body["message"], str) and body["message"]
    assert body["requestId"] == response.headers["x-request-id"]
    return body


async def new_thread(client: httpx.AsyncClient, tenant: Tenant, **body: Any) -> dict[str, Any]:
    """``POST /v1/threads`` as ``tenant``: the thread it created."""
    response = await client.post("/v1/threads", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def make_thread(client: httpx.AsyncClient, tenant: Tenant, **body: Any) -> str:
    """A new thread's id, for tests about what happens inside it."""
    thread_id: str = (await new_thread(client, tenant, **body))["id"]
    return thread_id


def tcp_listener() -> socket.socket:
    """A socket for a test peer to listen on whose accepted connections get ``TCP_NODELAY``: the stdlib
    asyncio loop sets it only on sockets whose ``proto`` is ``IPPROTO_TCP``, and an accepted socket inherits
    the listener's (``socket.socket()`` and ``socket.create_server`` leave it 0). Without it uvicorn's two
    writes of an answer (head, then body) meet the client's delayed ACK and each answer after a closely
    following request stalls ~40 ms (bench/mcp_calls.py ``tcp_listener``, bench/HISTORY.md 2026-11-27)."""
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    api_url: str
    intake_url: str

    log: Callable[[], str] = lambda: ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Show why it hangs: a stack dump of every thread (faulthandler, enabled below), then the log.
            self.process.send_signal(signal.SIGABRT)
            self.process.wait(timeout=5)
            raise AssertionError(f"server did not stop within {timeout} s:\n{self.log()}") from None


def threadline(
    *args: str, env: dict[str, str], check: bool = True, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI exactly as an operator would."""
    result = subprocess.run(
        [sys.executable, "-m", "threadline", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(f"threadline {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


@contextmanager
def spawned(
    args: list[str],
    env: dict[str, str],
    is_ready: Callable[[Callable[[], str]], bool],
    startup_timeout: float,
) -> Iterator[tuple[subprocess.Popen[bytes], Callable[[], str]]]:
    """``threadline ARGS``, waited for until ``is_ready(log)``; stopped with SIGTERM (SIGKILL after 15 s).

    Output goes to a file (a pipe nobody reads could fill and block the process) and is shown on failure."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "threadline", *args],
            env={**env, "PYTHONFAULTHANDLER": "1"},
            stdout=output,
            stderr=subprocess.STDOUT,
        )

        def log() -> str:
            output.seek(0)
            return output.read().decode(errors="replace")

        try:
            deadline = time.monotonic() + startup_timeout
            while not is_ready(log):
                if process.poll() is not None:
                    raise AssertionError(f"threadline {args[0]} exited with {process.returncode}: {log()}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"threadline {args[0]} did not become ready: {log()}")
                time.sleep(0.05)
            yield process, log
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@contextmanager
def running_server(env: dict[str, str], *extra: str, startup_timeout: float = 60) -> Iterator[ServerProcess]:
    """``threadline serve`` on free ports, waited for until both surfaces answer."""
    api_url, intake_url = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    args = [
        "serve",
        "--port",
        api_url.rsplit(":", 1)[1],
        "--intake-port",
        intake_url.rsplit(":", 1)[1],
        *extra,
    ]

    # One client for every poll: httpx.get builds a client, and with it an SSL context (~20 ms of CPU), each
    # call, which polling every 50 ms would take from the very server it waits for.
    with httpx.Client(timeout=1) as http:

        def ready(_log: Callable[[], str]) -> bool:
            return _answers(http, f"{api_url}/readyz") and _answers(http, f"{intake_url}/readyz")

        with spawned(args, env, ready, startup_timeout) as (process, log):
            yield ServerProcess(process, api_url, intake_url, log)


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    log: Callable[[], str]


@contextmanager
def running_worker(env: dict[str, str], *extra: str, startup_timeout: float = 60) -> Iterator[WorkerProcess]:
    """``threadline worker`` (with ``extra`` options), waited for until it says it executes runs."""
    with spawned(["worker", *extra], env, lambda log: "executing runs" in log(), startup_timeout) as (
        process,
        log,
    ):
        yield WorkerProcess(process, log)


def init_database(env: dict[str, str]) -> dict[str, Any]:
    """``threadline init --json`` on the (empty) database of ``env``: the first organization and its keys."""
    created: dict[str, Any] = json.loads(threadline("init", "--json", env=env).stdout)
    return created


async def listed(client: httpx.AsyncClient, tenant: Tenant, **params: Any) -> list[dict[str, Any]]:
    """Every record ``GET /v1/logs`` selects for ``tenant`` with ``params``, following nextCursor to the end
    (100 a page unless ``limit`` is given)."""
    records: list[dict[str, Any]] = []
    query: dict[str, Any] = {"limit": 100, **params}
    while True:
        response = await client.get("/v1/logs", params=query, headers=tenant.secret)
        assert response.status_code == 200, response.text
        body = response.json()
        records += body["data"]
        if body["nextCursor"] is None:
            return records
        query["cursor"] = body["nextCursor"]


def all_log_records(api_url: str, secret_key: str, timeout: float = 10) -> list[dict[str, Any]]:
    """Every record ``GET /v1/logs`` shows the key's organization, walking ``nextCursor`` to the end."""
    records: list[dict[str, Any]] = []
    params: dict[str, str | int] = {"limit": 100}
    with httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {secret_key}"}) as http:
        while True:
            response = http.get(f"{api_url}/v1/logs", params=params)
            assert response.status_code == 200, response.text
            page = response.json()
            records += page["data"]
            if page["nextCursor"] is None:
                return records
            params["cursor"] = page["nextCursor"]


def _answers(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(url).status_code == 200
    except httpx.TransportError:
        return False


__all__ = [
    "ServerProcess",
    "Tenant",
    "all_log_records",
    "assert_error",
    "free_port",
    "init_database",
    "make_tenant",
    "make_thread",
    "new_thread",
    "running_server",
    "running_worker",
    "threadline",
]
