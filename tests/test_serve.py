"""``threadline serve`` as a process: graceful shutdown loses nothing acknowledged; a taken port is a clear
error rather than a half-started server."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import Backend
from tests.support import Tenant, free_port, running_server, spawned, threadline
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


@pytest.mark.parametrize(
    ("command", "taken", "message"),
    [
        ("serve", "--port", "the API's port {} is in use (another server?): choose another with --port"),
        (
            "serve",
            "--intake-port",
            "the intake's port {} is in use (another server?): choose another with --intake-port",
        ),
        (
            "serve-intake",
            "--port",
            "the intake's port {} is in use (another server?): choose another with --port",
        ),
    ],
)
def test_a_taken_port_is_one_line_naming_the_option_that_moves_it(
    empty_env: dict[str, str], command: str, taken: str, message: str
) -> None:
    threadline("init", env=empty_env)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        ports = {"--port": str(free_port()), "--intake-port": str(free_port())} if command == "serve" else {}
        ports[taken] = str(port)
        args = [part for option, value in ports.items() for part in (option, value)]
        result = threadline(command, *args, env=empty_env, check=False, timeout=30)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {message.format(f'127.0.0.1:{port}')}"]
    assert result.stdout == ""


def test_start_up_says_once_where_each_listener_answers(backend: Backend, settings: Settings) -> None:
    """One line per listener naming it, and nothing else: no migration tool's chatter, none of uvicorn's
    lines (each printed once per server, so twice); then one line as it drains and one when stopped."""
    with running_server(backend.env(settings)) as server:
        assert server.stop(signal.SIGTERM) == 0
        said = [line.split(" ", 2)[2] for line in server.log().splitlines()]
    started = [
        f"INFO threadline.server: API at {server.api_url}/v1",
        f"INFO threadline.server: dashboard at {server.api_url}/",
        f"INFO threadline.server: intake at {server.intake_url}/v1/logs",
    ]
    assert sorted(said[:3]) == sorted(started)
    assert said[3:] == [
        "INFO threadline.server: shutting down: finishing the requests in flight (Ctrl-C again: at once)",
        "INFO threadline.server: stopped",
    ]


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
    """Waited for as every served process is (``spawned``: its output kept and shown on failure, a start-up
    deadline that a loaded machine does not miss, one polling client); it must still exit cleanly."""
    url = f"http://127.0.0.1:{free_port()}"
    with httpx.Client(base_url=url, timeout=10) as http:

        def ready(_log: object) -> bool:
            try:
                return http.get("/readyz").status_code == 200
            except httpx.TransportError:
                return False

        args = ["serve-intake", "--port", url.rsplit(":", 1)[1]]
        with spawned(args, env, ready, startup_timeout=60) as (process, log):
            sent = http.post("/v1/logs", json={"message": "alone"}, headers=public)
            assert sent.status_code == 202, sent.text
            assert http.get("/v1/threads", headers=public).status_code == 404, log()  # no API here
    assert process.returncode == 0  # a clean exit on SIGTERM
