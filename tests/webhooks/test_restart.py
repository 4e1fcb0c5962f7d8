"""Never lost: SIGKILL the server right after a run ends, and its event still reaches the receiver once a
server runs again (the fact was committed with the run's end; whatever the dispatcher had done of it
before the kill, fanned out, sent, or claimed mid-send, the next process finishes). Both shapes."""

from __future__ import annotations

import signal
import time

import httpx

from tests.conftest import Backend
from tests.support import Tenant, running_server
from tests.webhooks.conftest import KEY
from tests.webhooks.receiver import Receiver, verified
from threadline.config import Settings


def test_sigkill_right_after_a_run_ends_loses_no_event(
    backend: Backend, settings: Settings, tenant: Tenant, receiver: Receiver
) -> None:
    env = {
        **backend.env(settings),
        "THREADLINE_RUN_EXECUTION": "server",
        "THREADLINE_EGRESS_ALLOW": "127.0.0.1",
        "THREADLINE_ENCRYPTION_KEY": KEY,
    }
    path = f"/killed-{tenant.org_id}"
    receiver.statuses[path] = [503]  # the first attempt fails, before the kill or after: a retry succeeds
    with httpx.Client(timeout=30) as http:
        with running_server(env) as first:
            api = first.api_url
            hook = http.post(
                f"{api}/v1/webhooks",
                headers=tenant.secret,
                json={"url": receiver.url + path, "events": ["*"]},
            ).json()
            thread = http.post(f"{api}/v1/threads", headers=tenant.secret, json={}).json()["id"]
            run = http.post(
                f"{api}/v1/threads/{thread}/runs", headers=tenant.secret, json={"input": "#notools hi"}
            ).json()["id"]
            deadline = time.monotonic() + 15
            while http.get(f"{api}/v1/runs/{run}", headers=tenant.secret).json()["status"] != "completed":
                assert time.monotonic() < deadline
            assert first.stop(signal.SIGKILL) == -signal.SIGKILL
        with running_server(env):
            received = receiver.wait_for(path, 2, timeout=40)
    payloads = [verified(hook["secret"], r) for r in received]
    assert payloads[-1]["type"] == "run.completed"
    assert payloads[-1]["data"]["id"] == run
    assert {r.headers["webhook-id"] for r in received} == {received[0].headers["webhook-id"]}
