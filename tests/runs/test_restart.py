"""A server that stops mid-run never leaves the run running: SIGTERM fails it at once (EXECUTOR_STOPPED),
SIGKILL fails it once its lease lapses, found by the next server (EXECUTOR_LOST); both shapes."""

from __future__ import annotations

import signal
import time

import httpx
import pytest

from tests.conftest import Backend
from tests.runs.helpers import DONE, parse_sse
from tests.support import Tenant, running_server
from threadline.config import Settings

LEASE_SECONDS = 2


def start_slow_run(http: httpx.Client, api_url: str, tenant: Tenant) -> tuple[str, str]:
    thread = http.post(f"{api_url}/v1/threads", headers=tenant.secret, json={}).json()["id"]
    run = http.post(
        f"{api_url}/v1/threads/{thread}/runs",
        headers=tenant.secret,
        json={"input": "#notools #chunks=5000 #delay=20"},
    ).json()["id"]
    deadline = time.monotonic() + 10
    while http.get(f"{api_url}/v1/runs/{run}", headers=tenant.secret).json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return thread, run


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, "EXECUTOR_STOPPED"), (signal.SIGKILL, "EXECUTOR_LOST")]
)
def test_a_stopped_server_leaves_no_run_running(
    backend: Backend, settings: Settings, tenant: Tenant, sig: signal.Signals, code: str
) -> None:
    env = {
        **backend.env(settings),
        "THREADLINE_RUN_EXECUTION": "server",
        "THREADLINE_RUN_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    with httpx.Client(timeout=30) as http:
        with running_server(env) as first:
            thread, run = start_slow_run(http, first.api_url, tenant)
            time.sleep(0.5)  # mid-answer: some of its text streamed (a chunk every 20 ms)
            stopped = first.stop(sig)
            assert stopped == (0 if sig == signal.SIGTERM else -signal.SIGKILL)
        with running_server(env) as second:
            restarted = time.monotonic()
            response = http.get(f"{second.api_url}/v1/runs/{run}/stream", headers=tenant.secret)
            events = parse_sse(response.text)
            assert time.monotonic() - restarted < LEASE_SECONDS + 2
            assert events[-1] == DONE
            assert (events[-3]["type"], events[-3]["code"]) == ("error", code)
            assert (events[-2]["type"], events[-2]["status"]) == ("run_completed", "failed")
            assert [e["cursor"] for e in events[:-1]] == [f"{run}.{i}" for i in range(1, len(events))]
            state = http.get(f"{second.api_url}/v1/runs/{run}", headers=tenant.secret).json()
            assert (state["status"], state["error"]["code"]) == ("failed", code)
            thread_state = http.get(f"{second.api_url}/v1/threads/{thread}", headers=tenant.secret).json()
            assert thread_state["activeRunId"] is None
            # The answer cut off mid-turn is a message all the same, with what it streamed.
            [message_id] = {e["messageId"] for e in events[:-1] if "messageId" in e}
            message = http.get(
                f"{second.api_url}/v1/threads/{thread}/messages/{message_id}", headers=tenant.secret
            )
            assert message.status_code == 200, message.text
            streamed = "".join(e["delta"] for e in events[:-1] if e["type"] == "text_chunk")
            assert (message.json()["content"], message.json()["metadata"]) == (
                streamed,
                {"incomplete": "failed"},
            )
