"""``threadline serve`` as a process: graceful shutdown loses nothing acknowledged; a taken port is a clear
error rather than a half-started server."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import Backend
from tests.support import Tenant, free_port, running_server, threadline
from threadline.config import Settings
from threadline.projects.tables import projects
from threadline.runtime import Services
from threadline.telemetry.tables import log_records


async def test_sigterm_mid_traffic_loses_no_acknowledged_write(
    backend: Backend, settings: Settings, tenant: Tenant, services: Services
) -> None:
    acknowledged: list[str] = []
    stop, enough = threading.Event(), threading.Event()

    def writer(url: str, n: int) -> None:
        with httpx.Client(timeout=10) as http:
            i = 0
            while not stop.is_set():
                try:
                    response = http.post(url, headers=tenant.secret, json={"name": f"w{n}-{i}"})
                except httpx.TransportError:
                    return  # the server has stopped listening
                if response.status_code == 201:
                    acknowledged.append(response.json()["id"])
                    if len(acknowledged) >= 40:
                        enough.set()
                i += 1

    with running_server(backend.env(settings)) as server:
        writers = [
            threading.Thread(target=writer, args=(f"{server.api_url}/v1/projects", n)) for n in range(4)
        ]
        for thread in writers:
            thread.start()
        await asyncio.to_thread(enough.wait, 10)
        assert server.stop(signal.SIGTERM) == 0
        stop.set()
        for thread in writers:
            thread.join(timeout=10)
    assert len(acknowledged) >= 40
    async with services.db.transaction(write=False) as conn:
        stored = set(
            (await conn.execute(sa.select(projects.c.id).where(projects.c.id.in_(acknowledged)))).scalars()
        )
    assert stored == set(acknowledged)


def test_a_taken_port_is_a_clear_error(empty_env: dict[str, str]) -> None:
    threadline("init", env=empty_env)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = threadline(
            "serve",
            "--port",
            str(port),
            "--intake-port",
            str(free_port()),
            env=empty_env,
            check=False,
            timeout=30,
        )
    assert result.returncode == 1
    assert "could not start" in result.stderr


@pytest.mark.parametrize("trusted", [False, True])
def test_the_client_address_is_the_peers_unless_forwarded_for_is_trusted(
    backend: Backend, settings: Settings, trusted: bool
) -> None:
    """Refused requests are throttled per client address. X-Forwarded-For names that address only when
    the operator says a proxy of theirs sets it; otherwise a client sending its own is still the peer
    it connects from (here 127.0.0.1, where a local proxy would be) and cannot pick a fresh bucket."""
    env = {
        **backend.env(settings),
        "THREADLINE_DEFAULT_RATE_LIMIT_PER_MINUTE": "3",
        "THREADLINE_TRUST_FORWARDED_FOR": "true" if trusted else "false",
    }
    with running_server(env) as server, httpx.Client(timeout=10) as http:
        statuses = [
            http.get(
                f"{server.api_url}/v1/me",
                headers={"Authorization": "Bearer sk_not_a_key", "X-Forwarded-For": f"198.51.100.{n}"},
            ).status_code
            for n in range(4)
        ]
    assert statuses == ([401] * 4 if trusted else [401, 401, 401, 429])


async def test_serve_intake_runs_the_intake_alone(
    backend: Backend, settings: Settings, tenant: Tenant, services: Services
) -> None:
    """The intake scales apart from the API: its own process takes telemetry, and there is no API on it."""
    await asyncio.to_thread(_send_through_serve_intake, backend.env(settings), tenant.public)
    async with services.db.transaction(write=False) as conn:
        stored = await conn.execute(
            sa.select(log_records.c.message).where(log_records.c.organization_id == tenant.org_id)
        )
        assert stored.scalars().all() == ["alone"]


def _send_through_serve_intake(env: dict[str, str], public: dict[str, str]) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "threadline", "serve-intake", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "serve-intake did not start"
            time.sleep(0.05)
        sent = httpx.post(f"{url}/v1/logs", json={"message": "alone"}, headers=public, timeout=10)
        assert sent.status_code == 202, sent.text
        assert httpx.get(f"{url}/v1/threads", headers=public).status_code == 404  # no API here
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
