"""``threadline serve`` as a process: graceful shutdown loses nothing acknowledged; a taken port is a clear
error rather than a half-started server."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading

import httpx
import sqlalchemy as sa

from tests.conftest import Backend
from tests.support import Tenant, free_port, running_server, threadline
from threadline.config import Settings
from threadline.projects.tables import projects
from threadline.runtime import Services


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
