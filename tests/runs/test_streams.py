"""Run and thread streams: the offline model's whole event sequence, exact resumption (finished and live
runs), Last-Event-ID, the thread stream's rules, visibility, heartbeats; in both shapes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.runs.helpers import DONE, parse_sse, read_stream, start_run, types, wait_for_status
from tests.support import Tenant, assert_error, make_tenant, make_thread
from threadline.kit import sse
from threadline.runs import events
from threadline.runtime import Services

COMMON = {"type", "cursor", "runId", "threadId", "createdAt"}


def body_of(chunks: list[bytes]) -> list[Any]:
    return parse_sse(b"".join(chunks).decode())


class TestOfflineModel:
    async def test_the_full_event_sequence(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="Why did the checkout deploy fail?")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        kinds = types(events)
        assert kinds[0] == "run_started" and kinds[-2:] == ["run_completed", DONE]
        # Turn 1: reasoning, then two tools; turn 2: reasoning, then an artifact; turn 3: the answer.
        squeezed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
        assert squeezed == [
            "run_started",
            "message_started", "reasoning_chunk", "text_complete",
            "tool_call_start", "tool_call_complete", "tool_call_start", "tool_call_complete",
            "message_started", "reasoning_chunk", "text_complete",
            "tool_call_start", "artifact", "tool_call_complete",
            "message_started", "reasoning_chunk", "text_chunk", "text_complete",
            "run_completed", DONE,
        ]  # fmt: skip
        payload = {
            "run_started": {"model"},
            "message_started": {"messageId", "role"},
            "reasoning_chunk": {"messageId", "delta"},
            "text_chunk": {"messageId", "delta"},
            "text_complete": {"messageId", "text"},
            "tool_call_start": {"toolCallId", "name", "arguments"},
            "tool_call_complete": {"toolCallId", "name", "result", "isError"},
            "artifact": {"artifactId", "name", "mimeType", "content"},
            "run_completed": {"status", "usage"},
        }
        for event in events[:-1]:
            assert set(event) == COMMON | payload[event["type"]], event
            assert (event["runId"], event["threadId"]) == (run["id"], thread)
        assert [e["cursor"] for e in events[:-1]] == [f"{run['id']}.{i}" for i in range(1, len(events))]
        tools = [e for e in events[:-1] if e["type"] == "tool_call_complete"]
        assert [t["name"] for t in tools] == ["search_messages", "query_logs", "create_artifact"]
        assert not any(t["isError"] for t in tools)
        assert tools[0]["result"]["totalResults"] >= 1  # it finds the input it was given
        answer = [e for e in events[:-1] if e["type"] == "text_complete"][-1]
        chunks = "".join(e["delta"] for e in events[:-1] if e["type"] == "text_chunk")
        assert answer["text"] == chunks and "checkout deploy fail" in chunks
        completed = events[-2]
        assert completed["status"] == "completed"
        assert completed["usage"] == (await wait_for_status(client, tenant, run["id"], "completed"))["usage"]
        # The answer is the thread's newest message, under the id its events carried.
        messages = (await client.get(f"/v1/threads/{thread}/messages", headers=tenant.secret)).json()["data"]
        # Turns that only reasoned and called tools are stored too, without text (test_message_ids.py).
        assert [(m["role"], m["content"] == "") for m in messages] == [
            ("user", False), ("assistant", True), ("assistant", True), ("assistant", False)
        ]  # fmt: skip
        assert (messages[-1]["id"], messages[-1]["role"], messages[-1]["content"]) == (
            answer["messageId"],
            "assistant",
            answer["text"],
        )
        artifact = next(e for e in events[:-1] if e["type"] == "artifact")
        stored = (await client.get(f"/v1/artifacts/{artifact['artifactId']}", headers=tenant.secret)).json()
        assert stored["content"] == artifact["content"] and stored["runId"] == run["id"]
        assert stored["size"] == len(artifact["content"].encode())

    async def test_a_failing_model_ends_the_run_failed_with_an_error_event(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="please #fail")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events)[-3:] == ["error", "run_completed", DONE]
        assert events[-3]["code"] == "MODEL_ERROR"
        assert events[-2]["status"] == "failed"
        failed = await wait_for_status(client, tenant, run["id"], "failed")
        assert failed["error"]["code"] == "MODEL_ERROR"
        assert failed["usage"]["outputTokens"] == 1  # what it used before failing is recorded
        assert events[-2]["usage"] == failed["usage"]


class TestResume:
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(position=st.integers(min_value=0, max_value=80))
    async def test_resuming_a_finished_run_anywhere(
        self, client: httpx.AsyncClient, services: Services, position: int
    ) -> None:
        """Property: after any position, the stream is exactly the events after it, then [DONE]."""
        tenant = await make_tenant(services, "resume")
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="resume me")
        everything = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        position = min(position, len(everything) - 1)
        cursor = f"{run['id']}.{position}"
        by_query = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream", cursor=cursor)
        assert by_query == everything[position:]
        by_header = await read_stream(
            client, tenant, f"/v1/runs/{run['id']}/stream", headers={"Last-Event-ID": cursor}
        )
        assert by_header == everything[position:]

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(cuts=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=6))
    async def test_resuming_a_live_run_loses_and_repeats_nothing(
        self, client: httpx.AsyncClient, services: Services, cuts: list[int]
    ) -> None:
        """Property: a client that drops after any number of frames, again and again, while the run is
        live, and resumes from its last cursor, sees each event exactly once, in order."""
        tenant = await make_tenant(services, "live")
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#notools #chunks=40 #delay=5")
        seen: list[Any] = []
        after = 0
        for cut in [*cuts, 10_000]:
            stream = services.run_feeds.stream(tenant.org_id, run["id"], after)
            try:
                received: list[Any] = []
                while len(received) < cut and DONE not in received:
                    received += body_of([await asyncio.wait_for(anext(stream), 10)])
            finally:
                await stream.aclose()
            received = received[:cut] if DONE not in received[:cut] else received
            seen += received
            if DONE in received:
                break
            after = int(received[-1]["cursor"].rsplit(".", 1)[1])
        complete = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert seen[: len(complete)] == complete
        assert [e["cursor"] for e in seen[:-1]] == [f"{run['id']}.{i}" for i in range(1, len(seen))]

    async def test_a_malformed_or_foreign_cursor_is_refused(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="x #notools")
        other = await start_run(client, tenant, await make_thread(client, tenant), input="y #notools")
        for cursor in ("nonsense", f"{run['id']}.-1", f"{other['id']}.1", "run_x.1"):
            response = await client.get(
                f"/v1/runs/{run['id']}/stream", headers=tenant.secret, params={"cursor": cursor}
            )
            assert_error(response, 400, "BAD_REQUEST", operation_id="runs.stream", reason="INVALID_CURSOR")

    async def test_a_cursor_past_the_end_gets_done(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="x #notools")
        await wait_for_status(client, tenant, run["id"], "completed")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream", cursor=f"{run['id']}.999")
        assert events == [DONE]


class TestThreadStream:
    async def test_follows_the_active_run(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread, input="first #notools")
        await wait_for_status(client, tenant, first["id"], "completed")
        live = await start_run(client, tenant, thread, input="#notools #chunks=30 #delay=5")
        events = await read_stream(client, tenant, f"/v1/threads/{thread}/stream")
        assert {e["runId"] for e in events[:-1]} == {live["id"]}
        assert types(events)[0] == "run_started" and events[-1] == DONE
        assert events == await read_stream(client, tenant, f"/v1/runs/{live['id']}/stream")

    async def test_idle_thread_replays_its_latest_run_and_a_cursor_resumes_it(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        older = await start_run(client, tenant, thread, input="older #notools")
        await wait_for_status(client, tenant, older["id"], "completed")
        latest = await start_run(client, tenant, thread, input="latest #notools")
        await wait_for_status(client, tenant, latest["id"], "completed")
        replay = await read_stream(client, tenant, f"/v1/threads/{thread}/stream")
        assert {e["runId"] for e in replay[:-1]} == {latest["id"]}
        # A cursor names its run: resuming the older run's stream through the thread works too.
        resumed = await read_stream(client, tenant, f"/v1/threads/{thread}/stream", cursor=f"{older['id']}.2")
        assert resumed == (await read_stream(client, tenant, f"/v1/runs/{older['id']}/stream"))[2:]

    async def test_thread_without_runs_is_done_at_once(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        assert await read_stream(client, tenant, f"/v1/threads/{thread}/stream") == [DONE]

    async def test_a_cursor_of_another_thread_is_refused(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        elsewhere = await start_run(client, tenant, await make_thread(client, tenant), input="x #notools")
        response = await client.get(
            f"/v1/threads/{thread}/stream", headers=tenant.secret, params={"cursor": f"{elsewhere['id']}.1"}
        )
        assert_error(response, 400, "BAD_REQUEST", operation_id="threads.stream", reason="INVALID_CURSOR")


class TestVisibility:
    @pytest.mark.parametrize("kind", ["runs", "threads"])
    async def test_streams_of_another_organization_are_not_found(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, kind: str
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="secret #notools")
        path = f"/v1/runs/{run['id']}/stream" if kind == "runs" else f"/v1/threads/{thread}/stream"
        operation = "runs.stream" if kind == "runs" else "threads.stream"
        assert_error(
            await client.get(path, headers=other_tenant.secret), 404, "NOT_FOUND", operation_id=operation
        )
        response = await client.get(path, headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id=operation, reason="PUBLIC_KEY_NOT_ALLOWED")
        response = await client.get(path)
        assert_error(response, 401, "UNAUTHORIZED", operation_id=operation, missing=["Authorization"])
        response = await client.get(path, headers={"x-service-secret-key": tenant.created.secret_value})
        assert response.status_code == 200


class TestLive:
    async def test_heartbeat_while_a_run_is_quiet(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("threadline.runs.feeds.HEARTBEAT_SECONDS", 0.2)
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#notools #chunks=3 #delay=1500")
        stream = services.run_feeds.stream(tenant.org_id, run["id"], 0)
        try:
            frames = [await asyncio.wait_for(anext(stream), 5) for _ in range(4)]
        finally:
            await stream.aclose()
        assert sse.PING in frames
        await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)

    async def test_many_clients_of_one_run_share_its_events(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#notools #chunks=50 #delay=2")

        async def collect() -> list[Any]:
            return body_of([chunk async for chunk in services.run_feeds.stream(tenant.org_id, run["id"], 0)])

        results = await asyncio.wait_for(asyncio.gather(*(collect() for _ in range(50))), 20)
        assert all(result == results[0] for result in results)
        assert types(results[0])[-2:] == ["run_completed", DONE]
        assert services.run_feeds.followed_runs == 0  # the feed went with its last client
        assert json.dumps(results[0]).isascii()

    async def test_heartbeat_while_the_first_read_fails(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The database away when a stream opens: pings flow until its events can be read."""
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="quick #notools")
        await wait_for_status(client, tenant, run["id"], "completed")
        real_after = events.EventRepository.after
        failures = iter(range(3))

        async def flaky_after(*args: Any) -> list[events.Event]:
            if next(failures, None) is not None:
                raise OSError("database away")
            return await real_after(*args)

        monkeypatch.setattr("threadline.runs.feeds.HEARTBEAT_SECONDS", 0.05)
        monkeypatch.setattr("threadline.runs.feeds._POLL_SECONDS", 0.1)
        monkeypatch.setattr(events.EventRepository, "after", flaky_after)
        chunks = [chunk async for chunk in services.run_feeds.stream(tenant.org_id, run["id"], 0)]
        assert chunks[0] == sse.PING
        assert types(body_of(chunks))[-2:] == ["run_completed", DONE]
