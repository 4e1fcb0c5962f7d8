"""The distributed shape for real: two API processes and a ``threadline worker`` on PostgreSQL and Redis."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.conftest import Backend
from tests.runs.helpers import DONE
from tests.support import Tenant, running_server, running_worker
from threadline.config import Settings

pytestmark = pytest.mark.distributed

LEASE_SECONDS = 2
# A run that holds its slot for the whole test: its first delta comes after a minute.
STUCK = "#notools #delay=60000 #chunks=100000"


def sse_events(response: httpx.Response) -> Iterator[Any]:
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            yield DONE if data == DONE else json.loads(data)


def stream(
    http: httpx.Client, url: str, tenant: Tenant, limit: int | None = None, **params: Any
) -> list[Any]:
    """Up to ``limit`` events (then the connection is dropped), or all of them through [DONE]."""
    received: list[Any] = []
    with http.stream("GET", url, headers=tenant.secret, params=params, timeout=30) as response:
        assert response.status_code == 200
        for event in sse_events(response):
            received.append(event)
            if event == DONE or len(received) == limit:
                break
    return received


def post(http: httpx.Client, url: str, tenant: Tenant, **body: Any) -> dict[str, Any]:
    response = http.post(url, headers=tenant.secret, json=body)
    assert response.status_code in (200, 201), response.text
    created: dict[str, Any] = response.json()
    return created


def wait_for(http: httpx.Client, url: str, tenant: Tenant, status: str, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        run: dict[str, Any] = http.get(url, headers=tenant.secret).json()
        if run["status"] == status:
            return run
        assert time.monotonic() < deadline, f"run still {run['status']} after {within} s"
        time.sleep(0.02)


def test_worker_runs_stream_through_any_api_process(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    env = {**backend.env(settings), "THREADLINE_RUN_LEASE_SECONDS": str(LEASE_SECONDS)}
    with (
        running_server(env) as a,
        running_server(env) as b,
        running_worker(env) as worker,
        httpx.Client() as http,
    ):
        # A run executed by the worker, streamed from A; the client drops and resumes on B.
        thread = post(http, f"{a.api_url}/v1/threads", tenant)["id"]
        run = post(
            http, f"{a.api_url}/v1/threads/{thread}/runs", tenant, input="#notools #chunks=60 #delay=15"
        )
        first = stream(http, f"{a.api_url}/v1/runs/{run['id']}/stream", tenant, limit=20)
        rest = stream(http, f"{b.api_url}/v1/runs/{run['id']}/stream", tenant, cursor=first[-1]["cursor"])
        events = first + rest
        assert events[-1] == DONE and events[-2]["type"] == "run_completed"
        assert events[-2]["status"] == "completed"
        assert [e["cursor"] for e in events[:-1]] == [f"{run['id']}.{i}" for i in range(1, len(events))]
        assert sum(e["type"] == "text_chunk" for e in events[:-1]) == 60
        # Both processes replay it whole.
        assert stream(http, f"{a.api_url}/v1/runs/{run['id']}/stream", tenant) == events
        assert stream(http, f"{b.api_url}/v1/threads/{thread}/stream", tenant) == events

        # Cancelled on B, the worker stops the run within a second: it takes the next one at once.
        slow = post(
            http, f"{b.api_url}/v1/threads/{thread}/runs", tenant, input="#notools #chunks=500 #delay=20"
        )
        wait_for(http, f"{a.api_url}/v1/runs/{slow['id']}", tenant, "running", within=5)
        cancelled = post(http, f"{b.api_url}/v1/runs/{slow['id']}/cancel", tenant)
        assert cancelled["status"] == "cancelled"
        tail = stream(http, f"{a.api_url}/v1/runs/{slow['id']}/stream", tenant)
        assert tail[-2]["type"] == "run_completed" and tail[-2]["status"] == "cancelled"
        assert "executing runs" in worker.log()


def test_a_run_whose_worker_dies_fails_within_the_lease(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    env = {**backend.env(settings), "THREADLINE_RUN_LEASE_SECONDS": str(LEASE_SECONDS)}
    with running_server(env) as a, running_worker(env) as worker, httpx.Client() as http:
        thread = post(http, f"{a.api_url}/v1/threads", tenant)["id"]
        run = post(
            http, f"{a.api_url}/v1/threads/{thread}/runs", tenant, input="#notools #chunks=5000 #delay=20"
        )
        started = stream(http, f"{a.api_url}/v1/runs/{run['id']}/stream", tenant, limit=5)
        worker.process.send_signal(signal.SIGKILL)
        worker.process.wait(timeout=5)
        killed_at = time.monotonic()
        rest = stream(http, f"{a.api_url}/v1/runs/{run['id']}/stream", tenant, cursor=started[-1]["cursor"])
        ended_after = time.monotonic() - killed_at
        assert rest[-3:-1] == [
            {**rest[-3], "type": "error", "code": "EXECUTOR_LOST"},
            {**rest[-2], "type": "run_completed", "status": "failed"},
        ]
        assert rest[-1] == DONE
        # The lease lapses at most LEASE_SECONDS after the last renewal; the reaper looks twice as often.
        assert ended_after < LEASE_SECONDS + 1.5, ended_after
        failed = http.get(f"{a.api_url}/v1/runs/{run['id']}", headers=tenant.secret).json()
        assert failed["status"] == "failed" and failed["error"]["code"] == "EXECUTOR_LOST"
        thread_now = http.get(f"{a.api_url}/v1/threads/{thread}", headers=tenant.secret).json()
        assert thread_now["activeRunId"] is None


def test_two_workers_hold_an_organization_to_its_run_concurrency(
    backend: Backend, settings: Settings, tenant: Tenant, other_tenant: Tenant
) -> None:
    """Each worker has 16 slots: only the count taken under the organization's row lock, in the claiming
    transaction, keeps the two from starting more than 4 of one organization's runs between them."""
    env = backend.env(settings)
    with (
        running_server(env) as api,
        running_worker(env),
        running_worker(env),
        httpx.Client(base_url=api.api_url) as http,
    ):
        threads = [post(http, "/v1/threads", tenant)["id"] for _ in range(6)]
        with ThreadPoolExecutor(6) as pool:  # created at once, so both workers claim at once
            created = pool.map(lambda t: post(http, f"/v1/threads/{t}/runs", tenant, input=STUCK), threads)
            stuck = [run["id"] for run in created]

        def statuses() -> list[str]:
            found = (http.get(f"/v1/runs/{run}", headers=tenant.secret).json() for run in stuck)
            return sorted(run["status"] for run in found)

        deadline = time.monotonic() + 15
        while statuses().count("running") < 4:
            assert time.monotonic() < deadline, statuses()
            time.sleep(0.02)

        started = time.monotonic()
        thread = post(http, "/v1/threads", other_tenant)["id"]
        quick = post(http, f"/v1/threads/{thread}/runs", other_tenant, input="#notools #chunks=3")
        wait_for(http, f"/v1/runs/{quick['id']}", other_tenant, "completed", within=5)
        assert time.monotonic() - started < 5
        assert statuses() == ["queued"] * 2 + ["running"] * 4
        for run in stuck:
            http.post(f"/v1/runs/{run}/cancel", headers=tenant.secret)


def test_a_waiting_run_is_answered_on_any_process_and_continued_by_any_worker(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    """The run waits with no task and no lease: its worker stops, another starts, the answer reaches the
    other API process, and the one stream opened before the wait runs on to [DONE]."""
    env = {**backend.env(settings), "THREADLINE_RUN_LEASE_SECONDS": str(LEASE_SECONDS)}
    tools = [{"type": "function", "name": "lookup_order"}]
    with running_server(env) as a, running_server(env) as b, httpx.Client() as http:
        thread = post(http, f"{a.api_url}/v1/threads", tenant)["id"]
        run = post(
            http,
            f"{a.api_url}/v1/threads/{thread}/runs",
            tenant,
            tools=tools,
            input='#call=lookup_order {"id": 7}',
        )
        with ThreadPoolExecutor(1) as pool:
            whole = pool.submit(stream, http, f"{a.api_url}/v1/runs/{run['id']}/stream", tenant)
            with running_worker(env) as first:
                waiting = wait_for(http, f"{a.api_url}/v1/runs/{run['id']}", tenant, "requires_action", 30)
            assert first.process.returncode is not None  # stopped: nothing holds the run now
            assert waiting["requiredAction"]["toolCalls"][0]["arguments"] == {"id": 7}
            with running_worker(env):
                outputs = [{"toolCallId": "call_1", "output": {"status": "shipped"}}]
                answered = post(
                    http, f"{b.api_url}/v1/runs/{run['id']}/tool-outputs", tenant, toolOutputs=outputs
                )
                assert answered["status"] == "running"
                wait_for(http, f"{b.api_url}/v1/runs/{run['id']}", tenant, "completed", 30)
                events = whole.result(timeout=30)
    kinds = [e if e == DONE else e["type"] for e in events]
    assert kinds[:4] == ["run_started", "tool_call_start", "run_requires_action", "tool_call_complete"]
    assert kinds[-2:] == ["run_completed", DONE]
    text = next(e["text"] for e in events if e != DONE and e["type"] == "text_complete")
    assert text == 'lookup_order returned {"status":"shipped"}.'
