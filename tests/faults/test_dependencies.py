"""Fault injection on the distributed shape: a PostgreSQL and a Redis of the test's own, whose sessions are
terminated, which are shut down, restarted and killed under the API, the intake and running runs. An outage
is answered 503 ``DEPENDENCY_DOWN`` (never 500), healthy servers mean healthy answers at once, and a run rides
out an outage shorter than its lease."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from tests.dashboard.support import Dashboard, make_member
from tests.faults.own_services import OwnPostgres, OwnRedis, own_postgres, own_redis
from tests.support import Tenant, make_tenant
from threadline.app import create_app
from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.storage.migrate import upgrade

pytestmark = pytest.mark.distributed


# Runs wait out an outage for half their lease (2 s), and a lease renewed every third of it has at least
# 2.67 s left when an outage starts: the tests' outages fall on either side of the first figure.
_LEASE_SECONDS = 4.0


@pytest.fixture(scope="module")
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


@pytest.fixture(scope="module")
def redis() -> Iterator[OwnRedis]:
    with own_redis() as server:
        yield server


@pytest.fixture(scope="module")
async def served(postgres: OwnPostgres, redis: OwnRedis) -> AsyncIterator[tuple[FastAPI, FastAPI]]:
    """One API and one intake application (in this process) on the servers of the test's own."""
    settings = Settings(
        data_dir=Path(tempfile.mkdtemp(prefix="threadline-faults-")),
        database_url=postgres.url,
        redis_url=redis.url,
        redis_prefix=f"faults:{secrets.token_hex(4)}:",
        run_execution="server",
        run_lease_seconds=_LEASE_SECONDS,
    )
    await asyncio.to_thread(upgrade, settings.resolved_database_url)
    api = create_app(settings, chores=False)
    async with api.router.lifespan_context(api):
        intake = create_intake_app(settings, services=api.state.runtime.services)
        async with intake.router.lifespan_context(intake):
            yield api, intake


@pytest.fixture(scope="module")
async def http(served: tuple[FastAPI, FastAPI]) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    api, intake = served
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://api") as api_http,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=intake), base_url="http://intake") as intake_http,
    ):
        yield api_http, intake_http


@pytest.fixture(scope="module")
async def tenant(served: tuple[FastAPI, FastAPI]) -> Tenant:
    return await make_tenant(served[0].state.runtime.services, "faults")


_TERMINATE = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'postgres' "
    "AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND ($1 OR wait_event_type = 'Lock')"
)


async def _terminate_sessions(admin: asyncpg.Connection, *, all_sessions: bool = True) -> int:
    """Terminates the app's sessions (all, or those waiting on a lock); how many."""
    terminated: int = await admin.fetchval(_TERMINATE, all_sessions)
    return terminated


def _down(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert (body["code"], body["reason"]) == ("SERVICE_UNAVAILABLE", "DEPENDENCY_DOWN"), body


async def test_a_session_terminated_mid_statement_is_a_503_then_healthy(
    postgres: OwnPostgres, http: tuple[httpx.AsyncClient, httpx.AsyncClient], tenant: Tenant
) -> None:
    """asyncpg's "terminating connection due to administrator command" (57P01) arrives as a bare
    ``DBAPIError``: it is an outage, not a bug."""
    api, _ = http
    created = await api.post("/v1/threads", json={"title": "locked"}, headers=tenant.secret)
    thread_id = created.json()["id"]
    admin = await asyncpg.connect(postgres.url)
    try:
        locker = admin.transaction()
        await locker.start()
        await admin.execute("SELECT 1 FROM threads WHERE id = $1 FOR UPDATE", thread_id)
        patch = asyncio.create_task(
            api.patch(f"/v1/threads/{thread_id}", json={"title": "waits"}, headers=tenant.secret)
        )
        for _ in range(200):  # the PATCH waits on the row lock, inside PostgreSQL
            if await _terminate_sessions(admin, all_sessions=False):
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("the PATCH never waited on the lock")
        _down(await patch)
        await locker.rollback()
    finally:
        await admin.close()
    again = await api.patch(f"/v1/threads/{thread_id}", json={"title": "after"}, headers=tenant.secret)
    assert again.status_code == 200, again.text


async def test_a_shutting_down_postgres_is_a_503_on_api_and_intake(
    postgres: OwnPostgres, http: tuple[httpx.AsyncClient, httpx.AsyncClient], tenant: Tenant
) -> None:
    """ "the database system is shutting down" (57P03, the same code as "starting up") on every new
    connection: a smart shutdown waits for one session (ours) while it refuses the others."""
    api, intake = http
    assert (await api.get("/v1/threads", headers=tenant.secret)).status_code == 200
    thread_id = (await api.post("/v1/threads", json={}, headers=tenant.secret)).json()["id"]
    services = api._transport.app.state.runtime.services  # type: ignore[attr-defined]
    member = await make_member(services, tenant, f"ops-{secrets.token_hex(4)}@faults.test")
    # The dashboard's error page is sent before Starlette re-raises the failure to the server, as it does.
    pages = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=api._transport.app, raise_app_exceptions=False),  # type: ignore[attr-defined]
        base_url="http://api",
    )
    dashboard = Dashboard(pages)
    await dashboard.sign_in(member)
    admin = await asyncpg.connect(postgres.url)
    try:
        await _terminate_sessions(admin)  # the app's pooled connections: it must connect anew
        await asyncio.to_thread(postgres.stop, "smart", wait=False)
        await asyncio.sleep(0.2)
        for _ in range(3):
            _down(await api.get("/v1/threads", headers=tenant.secret))
            _down(await api.post("/v1/threads", json={}, headers=tenant.secret))
            _down(await intake.post("/v1/logs", json=[{"message": "refused"}], headers=tenant.public))
            _down(await api.get(f"/v1/threads/{thread_id}/stream", headers=tenant.secret))
            page = await dashboard.get("/threads")
            assert page.status_code == 503 and "The database is unreachable" in page.text, page.text
        _down(await api.get("/readyz"))
    finally:
        await admin.close()  # the smart shutdown completes
        await pages.aclose()
    await asyncio.to_thread(_wait_stopped_and_start, postgres)
    assert (await api.get("/v1/threads", headers=tenant.secret)).status_code == 200
    back = await intake.post("/v1/logs", json=[{"message": "back"}], headers=tenant.public)
    assert back.status_code == 202, back.text


def _wait_stopped_and_start(postgres: OwnPostgres) -> None:
    pid_file = postgres.root / "data" / "postmaster.pid"
    for _ in range(300):
        if not pid_file.exists():
            break
        time.sleep(0.02)
    postgres.start()


async def test_requests_across_a_postgres_restart_are_answered_or_503(
    postgres: OwnPostgres, http: tuple[httpx.AsyncClient, httpx.AsyncClient], tenant: Tenant
) -> None:
    """The probe's case: API reads and writes and intake batches, 16 at a time, while PostgreSQL restarts
    (a fast shutdown, then a start): each is answered or refused 503, never 500."""
    api, intake = http
    statuses: list[int] = []
    restarted = asyncio.Event()

    async def client(number: int) -> None:
        while not restarted.is_set():
            if number % 3 == 0:
                answer = await intake.post(
                    "/v1/logs", json=[{"message": f"load {number}"}], headers=tenant.public
                )
            elif number % 3 == 1:
                answer = await api.post(
                    "/v1/threads", json={"title": f"load {number}"}, headers=tenant.secret
                )
            else:
                answer = await api.get("/v1/threads", headers=tenant.secret)
            statuses.append(answer.status_code)
            if answer.status_code == 503:
                _down(answer)
                await asyncio.sleep(0.01)

    clients = [asyncio.create_task(client(n)) for n in range(16)]
    await asyncio.sleep(0.2)
    await asyncio.to_thread(postgres.stop, "fast")
    await asyncio.sleep(0.2)
    await asyncio.to_thread(postgres.start)
    await asyncio.sleep(0.3)
    restarted.set()
    await asyncio.gather(*clients)
    assert set(statuses) <= {200, 201, 202, 503}, sorted(set(statuses))
    assert 503 in statuses
    assert (await api.get("/v1/threads", headers=tenant.secret)).status_code == 200


async def test_runs_ride_out_a_short_postgres_restart(
    postgres: OwnPostgres, http: tuple[httpx.AsyncClient, httpx.AsyncClient], tenant: Tenant
) -> None:
    """Runs streaming when PostgreSQL restarts (stopped for half a second) complete: their commits are
    retried within their lease."""
    api, _ = http
    runs = await _start_runs(api, tenant, "ride it out #notools #chunks=40 #delay=40")
    await asyncio.sleep(0.3)
    await asyncio.to_thread(postgres.stop, "fast")
    await asyncio.sleep(0.5)
    await asyncio.to_thread(postgres.start)
    ended = await _until(api, tenant, runs, {"completed", "failed", "cancelled"}, within=30)
    assert [run["status"] for run in ended] == ["completed"] * 3, ended


async def test_a_run_that_cannot_wait_out_the_outage_ends_saying_why(
    postgres: OwnPostgres, http: tuple[httpx.AsyncClient, httpx.AsyncClient], tenant: Tenant
) -> None:
    """Down for longer than a run waits (half its lease), shorter than the lease: the run ends ``failed``
    with ``DEPENDENCY_DOWN`` once PostgreSQL is back (not ``INTERNAL_ERROR``, nor a reaper's guess)."""
    api, _ = http
    runs = await _start_runs(api, tenant, "too long #notools #chunks=100 #delay=40", count=1)
    await asyncio.sleep(0.2)
    await asyncio.to_thread(postgres.stop, "fast")
    await asyncio.sleep(_LEASE_SECONDS / 2 + 0.3)
    await asyncio.to_thread(postgres.start)
    ended = await _until(api, tenant, runs, {"completed", "failed", "cancelled"}, within=30)
    assert ended[0]["status"] == "failed", ended
    assert ended[0]["error"]["code"] == "DEPENDENCY_DOWN", ended


async def _start_runs(api: httpx.AsyncClient, tenant: Tenant, prompt: str, count: int = 3) -> list[str]:
    """``count`` runs, each in a thread of its own, once they execute."""
    runs: list[str] = []
    for _ in range(count):
        thread_id = (await api.post("/v1/threads", json={}, headers=tenant.secret)).json()["id"]
        await api.post(f"/v1/threads/{thread_id}/messages", json={"content": prompt}, headers=tenant.secret)
        started = await api.post(f"/v1/threads/{thread_id}/runs", json={}, headers=tenant.secret)
        assert started.status_code == 201, started.text
        runs.append(started.json()["id"])
    await _until(api, tenant, runs, {"running"})
    return runs


async def _until(
    api: httpx.AsyncClient, tenant: Tenant, run_ids: list[str], statuses: set[str], within: float = 15
) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        answers = [await api.get(f"/v1/runs/{run_id}", headers=tenant.secret) for run_id in run_ids]
        found = [answer.json() for answer in answers if answer.status_code == 200]
        if len(found) == len(run_ids) and all(run["status"] in statuses for run in found):
            return found
        assert loop.time() < deadline, found
        await asyncio.sleep(0.05)


async def test_a_restarted_redis_answers_at_once(
    redis: OwnRedis, http: tuple[httpx.AsyncClient, httpx.AsyncClient], tenant: Tenant
) -> None:
    """Every pooled connection is dead after a restart; none may cost a client a 503 once Redis answers."""
    api, _ = http

    async def burst() -> list[int]:
        answers = await asyncio.gather(*(api.get("/v1/me", headers=tenant.secret) for _ in range(60)))
        return [answer.status_code for answer in answers]

    assert set(await burst()) == {200}  # many connections in the pool
    await asyncio.to_thread(redis.kill)
    _down(await api.get("/v1/me", headers=tenant.secret))
    await asyncio.to_thread(redis.start)
    assert set(await burst()) == {200}
