"""Both clients against a real ``threadline serve`` per storage shape: a cursor walk over 250 threads, a
429 retried after the server's Retry-After, and run streams whose TCP connections are cut (inside
frames too) by a proxy, resumed with nothing lost or repeated."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from threadline_client import AsyncThreadline, RateLimitError, Threadline, ThreadlineError
from threadline_client.types import LogRecordEvent, RunCompleted

from tests.client.conftest import Served
from tests.client.cutting_proxy import CuttingProxy


async def test_a_cursor_walk_over_250_threads(served: Served) -> None:
    tenant = await served.organization("Walk")
    with Threadline(tenant.created.secret_value, served.api_url) as client:
        created = [client.threads.create(title=f"t{i}").id for i in range(250)]
        first = client.threads.list(limit=100)
        assert len(first.data) == 100 and first.next_cursor is not None
        walked = [thread.id for thread in first]
    assert walked == created[::-1]  # newest first, each once
    async with AsyncThreadline(tenant.created.secret_value, served.api_url) as aclient:
        assert [thread.id async for thread in aclient.threads.list(limit=100)] == walked
        page = await aclient.threads.list(limit=7)
        assert len(page.data) == 7 and [t.id async for t in page][:8] == walked[:8]


def _drain(api_url: str, key: str) -> None:
    """Spends the key's budget: GET /me until the server answers 429."""
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
        for _ in range(300):
            if http.get(f"{api_url}/me").status_code == 429:
                return
    raise AssertionError("never rate limited")


class Drained:
    """Event hooks for a client's HTTP client: ``arm()`` makes the budget spent right before the next
    request goes out, and each response's status and time are kept. At 30 a minute a token comes back
    every 2 s, and a loaded machine has taken longer than that between a drain and the next request
    (making its client, sending): drained in the request's own hook, it is refused whatever the load."""

    def __init__(self, api_url: str, key: str) -> None:
        self.api_url, self.key = api_url, key
        self.armed = False
        self.seen: list[int] = []
        self.times: list[float] = []

    def arm(self) -> None:
        self.armed = True

    def request(self, request: httpx.Request) -> None:
        if self.armed:
            self.armed = False
            _drain(self.api_url, self.key)

    def response(self, response: httpx.Response) -> None:
        self.seen.append(response.status_code)
        self.times.append(time.monotonic())

    def waited(self) -> float:
        """From the first answer to the last: the client's waits between its attempts."""
        return self.times[-1] - self.times[0]

    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self.request], "response": [self.response]}

    def async_hooks(self) -> dict[str, list[Any]]:
        async def request(request: httpx.Request) -> None:
            self.request(request)

        async def response(response: httpx.Response) -> None:
            self.response(response)

        return {"request": [request], "response": [response]}


async def test_a_429_is_retried_after_retry_after(served: Served) -> None:
    tenant = await served.organization("Throttled")
    with Threadline(tenant.created.secret_value, served.api_url) as admin:
        # 30 a minute: once spent, a request is allowed again every 2 s (Retry-After: 1 or 2).
        key = admin.keys.create(name="slow", type="secret", rate_limit_per_minute=30).key

    drained = Drained(served.api_url, key)
    with Threadline(
        key, served.api_url, max_retries=4, http_client=httpx.Client(event_hooks=drained.hooks())
    ) as client:
        drained.arm()
        assert client.me.get().key.name == "slow"
        seen = drained.seen
        assert seen[0] == 429 and seen[-1] == 200 and set(seen[:-1]) == {429} and drained.waited() >= 0.9
        drained.arm()
        with pytest.raises(RateLimitError) as refused:
            client.with_options(max_retries=0).me.get()
        assert refused.value.retry_after_seconds in (1, 2) and refused.value.operation_id == "me.get"

    drained = Drained(served.api_url, key)
    async with AsyncThreadline(
        key, served.api_url, http_client=httpx.AsyncClient(event_hooks=drained.async_hooks())
    ) as aclient:
        drained.arm()
        assert (await aclient.me.get()).key.name == "slow"
        seen = drained.seen
        assert seen[0] == 429 and seen[-1] == 200 and set(seen[:-1]) == {429} and drained.waited() >= 0.9


@pytest.fixture
def fast_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reconnections without the backoff's wait (each cut here is deliberate)."""
    monkeypatch.setattr("threadline_client._streams.backoff", lambda *_: 0.01)


# Bytes from the server before each of the first connections is cut: past the response's headers, into
# the frames (most cuts fall inside one).
CUTS: list[int | None] = [700, 1100, 450, 1600, 900, 1300]


def _check(
    events: list[dict[str, object]], replay: list[dict[str, object]], run_id: str, proxy: CuttingProxy
) -> None:
    assert events == replay
    assert [e["cursor"] for e in events] == [f"{run_id}.{i}" for i in range(1, len(events) + 1)]
    assert events[-1]["type"] == "run_completed"
    assert len(proxy.received) == len(CUTS) and proxy.cuts_inside_frames() >= 3


async def test_streams_cut_mid_frame_resume_with_nothing_lost_or_repeated(
    served: Served, fast_resume: None
) -> None:
    tenant = await served.organization("Cut streams")
    key, port = tenant.created.secret_value, int(served.server.api_url.rsplit(":", 1)[1])
    with Threadline(key, served.api_url) as client:
        thread = client.threads.create().id
        run = client.runs.create(thread, input="#notools #chunks=40 #delay=5")
        with (
            CuttingProxy(port, CUTS).running() as proxy,
            Threadline(key, f"http://127.0.0.1:{proxy.port}/v1") as cut,
        ):
            live = list(cut.runs.stream(run.id))
        replay = [event.to_dict() for event in client.runs.stream(run.id)]
        _check([event.to_dict() for event in live], replay, run.id, proxy)
        assert isinstance(live[-1], RunCompleted) and live[-1].status == "completed"

        # The thread's stream and the async client, through the same kind of cuts.
        with (
            CuttingProxy(port, CUTS).running() as proxy,
            Threadline(key, f"http://127.0.0.1:{proxy.port}/v1") as cut,
        ):
            _check([e.to_dict() for e in cut.threads.stream(thread)], replay, run.id, proxy)
        with CuttingProxy(port, CUTS).running() as proxy:
            async with AsyncThreadline(key, f"http://127.0.0.1:{proxy.port}/v1") as acut:
                events = [event.to_dict() async for event in acut.runs.stream(run.id)]
            _check(events, replay, run.id, proxy)

        # A live run, read by the async client while it is written.
        second = client.runs.create(thread, input="#notools #chunks=40 #delay=20")
        with CuttingProxy(port, CUTS).running() as proxy:
            async with AsyncThreadline(key, f"http://127.0.0.1:{proxy.port}/v1") as acut:
                events = [event.to_dict() async for event in acut.runs.stream(second.id)]
        _check(events, [e.to_dict() for e in client.runs.stream(second.id)], second.id, proxy)


async def test_intake_health_and_log_stream(served: Served) -> None:
    """The intake's operations go to the intake's address with the public key; the probes to the root."""
    tenant = await served.organization("Intake")
    with Threadline(
        tenant.created.secret_value,
        served.api_url,
        public_key=tenant.created.public_value,
        intake_url=f"{served.server.intake_url}/v1",
    ) as client:
        assert client.health.live().status == "ok" and client.health.ready().status == "ready"
        since = client.me.get().organization.created_at
        sent = client.intake.send_logs(
            [{"message": "disk full", "level": "error", "attributes": {"disk": "sda"}}]
        )
        assert sent.accepted == 1
        assert client.intake.send_events([{"name": "signup", "distinctId": "u1"}]).accepted == 1
        records = list(client.logs.list(limit=1))
        assert [(r.kind, r.name) for r in records] == [("event", "signup"), ("log", None)]
        assert records[1].attributes == {"disk": "sda"} and records[1].project_id == tenant.project_id
        stream = client.logs.stream(since=since, level="error")
        first = next(stream)
        assert isinstance(first, LogRecordEvent) and first.message == "disk full" and first.cursor
        stream.close()
    with (
        Threadline(public_key=tenant.created.public_value) as intake_only,
        pytest.raises(ThreadlineError) as no_key,
    ):
        intake_only.threads.list()
    assert "THREADLINE_API_KEY" in str(no_key.value)


async def test_answering_a_waiting_run_with_the_client(served: Served) -> None:
    """``runs.approve`` then ``runs.submit_tool_outputs`` on a run that waits for both, typed on the way."""
    tenant = await served.organization("Tools")
    tools = [
        {"type": "builtin", "name": "query_logs", "requireApproval": True},
        {"type": "function", "name": "f"},
    ]
    prompt = "#call=query_logs {}\n#call=f {}"
    async with AsyncThreadline(tenant.created.secret_value, served.api_url) as aclient:
        thread = await aclient.threads.create()
        run = await aclient.runs.create(thread.id, tools=tools, input=prompt)

        async def waiting(kind: str) -> Any:
            async with asyncio.timeout(15):
                while True:
                    found = await aclient.runs.get(run.id)
                    if found.required_action is not None and found.required_action.type == kind:
                        return found.required_action
                    await asyncio.sleep(0.02)

        asked = await waiting("approve_tool_calls")
        assert [call.name for call in asked.tool_calls] == ["query_logs"]
        await aclient.runs.approve(run.id, rejected={"call_1": "no logs today"})
        asked = await waiting("submit_tool_outputs")
        assert [(call.id, call.arguments) for call in asked.tool_calls] == [("call_2", {})]
        answered = await aclient.runs.submit_tool_outputs(run.id, {"call_2": {"ok": True}})
        assert answered.status == "running"
        events = [event.to_dict() async for event in aclient.runs.stream(run.id)]
    completes = {e["toolCallId"]: e for e in events if e["type"] == "tool_call_complete"}
    assert completes["call_1"]["result"] == {"error": "rejected", "reason": "no logs today"}
    assert completes["call_2"]["result"] == {"ok": True}
    assert events[-1]["type"] == "run_completed"
