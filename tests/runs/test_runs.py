"""Runs: create (with the three multitask strategies), list, get, cancel; in both shapes."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.runs.helpers import (
    DONE,
    SLOW,
    executing_task,
    get_run,
    read_stream,
    start_run,
    types,
    wait_for_event,
    wait_for_status,
)
from tests.support import Tenant, assert_error, make_thread
from threadline.runtime import Services

RUN_FIELDS = {
    "id", "threadId", "status", "model", "instructions", "automationId", "metadata", "error", "usage",
    "createdAt", "startedAt", "endedAt", "tools", "actionTimeoutSeconds", "requiredAction", "responseFormat",
    "agentId", "agentVersion",
}  # fmt: skip


async def thread_of(client: httpx.AsyncClient, tenant: Tenant, thread_id: str) -> dict[str, object]:
    response = await client.get(f"/v1/threads/{thread_id}", headers=tenant.secret)
    assert response.status_code == 200
    thread: dict[str, object] = response.json()
    return thread


class TestCreate:
    async def test_requires_a_secret_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        response = await client.post(f"/v1/threads/{thread}/runs", json={})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="runs.create", missing=["Authorization"])
        response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.public, json={})
        assert_error(response, 403, "FORBIDDEN", operation_id="runs.create", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_another_organizations_thread_is_not_found(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        response = await client.post(f"/v1/threads/{thread}/runs", headers=other_tenant.secret, json={})
        assert_error(response, 404, "NOT_FOUND", operation_id="runs.create")

    @pytest.mark.parametrize(
        "body",
        [
            {"model": "nobody/model"},
            {"model": "offline/other"},
            {"model": "scripted"},
            {"multitaskStrategy": "queue"},
            {"input": 42},
            {"input": "x" * (256 * 1024 + 1)},
            {"metadata": {"k": 1}},
            {"instructions": "x" * 32_769},
            {"unknown": True},
        ],
    )
    async def test_refuses_bad_input(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, object]
    ) -> None:
        thread = await make_thread(client, tenant)
        response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json=body)
        assert response.status_code in (400, 413), response.text
        assert response.json()["operationId"] == "runs.create"
        assert (await thread_of(client, tenant, thread))["messageCount"] == 0

    async def test_creates_a_queued_run_and_appends_the_input(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="hello there", metadata={"source": "test"})
        assert set(run) == RUN_FIELDS
        assert run["status"] == "queued"
        assert run["model"] == "offline/scripted"
        assert run["metadata"] == {"source": "test"}
        assert run["usage"] == {"inputTokens": 0, "outputTokens": 0}
        assert run["error"] is None and run["endedAt"] is None
        messages = (await client.get(f"/v1/threads/{thread}/messages", headers=tenant.secret)).json()["data"]
        assert (messages[0]["role"], messages[0]["content"], messages[0]["runId"]) == (
            "user",
            "hello there",
            run["id"],
        )
        done = await wait_for_status(client, tenant, run["id"], "completed")
        assert done["startedAt"] is not None and done["endedAt"] is not None
        assert done["usage"]["inputTokens"] > 0 and done["usage"]["outputTokens"] > 0

    async def test_model_and_instructions_default_to_the_settings(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        response = await client.patch(
            "/v1/settings",
            headers=tenant.secret,
            json={"instructions": "Be brief.", "defaultModel": "offline/scripted"},
        )
        assert response.status_code == 200, response.text
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="hi #notools")
        assert (run["model"], run["instructions"]) == ("offline/scripted", "Be brief.")
        await wait_for_status(client, tenant, run["id"], "completed")
        own = await start_run(client, tenant, thread, instructions="Be thorough.")
        assert own["instructions"] == "Be thorough."

    async def test_reject_is_the_default_while_a_run_is_active(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread, input=SLOW)
        assert (await thread_of(client, tenant, thread))["activeRunId"] == first["id"]
        for body in ({}, {"multitaskStrategy": "reject", "input": "not appended"}):
            response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json=body)
            assert_error(response, 409, "CONFLICT", operation_id="runs.create", reason="RUN_ACTIVE")
        assert (await thread_of(client, tenant, thread))["messageCount"] == 1
        await client.post(f"/v1/runs/{first['id']}/cancel", headers=tenant.secret)
        assert (await thread_of(client, tenant, thread))["activeRunId"] is None
        await start_run(client, tenant, thread, input="now it may #notools")

    async def test_enqueue_starts_when_the_active_run_ends(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread, input=SLOW)
        await wait_for_status(client, tenant, first["id"], "running")
        second = await start_run(client, tenant, thread, input="next #notools", multitaskStrategy="enqueue")
        third = await start_run(client, tenant, thread, input="last #notools", multitaskStrategy="enqueue")
        # Runs are claimed oldest first: once a run created after them has started elsewhere, the executor
        # has passed over the queued ones while the first still runs.
        later = await start_run(client, tenant, await make_thread(client, tenant), input="probe #notools")
        await wait_for_status(client, tenant, later["id"], "running", "completed")
        assert (await get_run(client, tenant, second["id"]))["status"] == "queued"
        assert (await thread_of(client, tenant, thread))["activeRunId"] == first["id"]
        await client.post(f"/v1/runs/{first['id']}/cancel", headers=tenant.secret)
        done_second = await wait_for_status(client, tenant, second["id"], "completed")
        done_third = await wait_for_status(client, tenant, third["id"], "completed")
        assert done_second["endedAt"] <= done_third["startedAt"]  # one at a time, in order
        # Each answers its own input, not the input of a run queued after it.
        answer = (await read_stream(client, tenant, f"/v1/runs/{second['id']}/stream"))[-3]
        assert (
            answer["type"] == "text_complete" and '"next' in answer["text"] and "last" not in answer["text"]
        )
        assert (await thread_of(client, tenant, thread))["activeRunId"] is None

    async def test_interrupt_cancels_the_active_runs_first(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread, input=SLOW)
        await wait_for_status(client, tenant, first["id"], "running")
        queued = await start_run(client, tenant, thread, input=SLOW, multitaskStrategy="enqueue")
        latest = await start_run(
            client, tenant, thread, input="urgent #notools", multitaskStrategy="interrupt"
        )
        assert (await get_run(client, tenant, first["id"]))["status"] == "cancelled"
        assert (await get_run(client, tenant, queued["id"]))["status"] == "cancelled"
        await wait_for_status(client, tenant, latest["id"], "completed")
        events = await read_stream(client, tenant, f"/v1/runs/{first['id']}/stream")
        assert events[-2]["type"] == "run_completed" and events[-2]["status"] == "cancelled"
        assert events[-1] == DONE


class TestReadAndList:
    async def test_get_and_list(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread, input="one #notools")
        await wait_for_status(client, tenant, first["id"], "completed")
        second = await start_run(client, tenant, thread, input="two #notools")
        listed = (
            await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret, params={"limit": 1})
        ).json()
        assert [r["id"] for r in listed["data"]] == [second["id"]]
        rest = await client.get(
            f"/v1/threads/{thread}/runs", headers=tenant.secret, params={"cursor": listed["nextCursor"]}
        )
        assert [r["id"] for r in rest.json()["data"]] == [first["id"]]
        assert set(await get_run(client, tenant, first["id"])) == RUN_FIELDS
        for path, operation in (
            (f"/v1/runs/{first['id']}", "runs.get"),
            (f"/v1/threads/{thread}/runs", "runs.list"),
            (f"/v1/runs/{first['id']}/artifacts", "artifacts.list"),
        ):
            response = await client.get(path, headers=other_tenant.secret)
            assert_error(response, 404, "NOT_FOUND", operation_id=operation)
        response = await client.get(f"/v1/runs/{first['id']}")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="runs.get", missing=["Authorization"])
        response = await client.get("/v1/runs/run_00000000000000000000000000", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="runs.get")
        response = await client.get(
            f"/v1/threads/{thread}/runs", headers=tenant.secret, params={"cursor": "zz"}
        )
        assert_error(response, 400, "BAD_REQUEST", operation_id="runs.list", reason="INVALID_CURSOR")
        await wait_for_status(client, tenant, second["id"], "completed")

    async def test_deleting_the_thread_deletes_its_runs_events_and_artifacts(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="make a summary")
        await wait_for_status(client, tenant, run["id"], "completed")
        artifacts = (await client.get(f"/v1/runs/{run['id']}/artifacts", headers=tenant.secret)).json()[
            "data"
        ]
        assert len(artifacts) == 1
        assert (await client.delete(f"/v1/threads/{thread}", headers=tenant.secret)).status_code == 200
        assert (await client.get(f"/v1/runs/{run['id']}", headers=tenant.secret)).status_code == 404
        response = await client.get(f"/v1/artifacts/{artifacts[0]['id']}", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="artifacts.get")
        assert (await client.get(f"/v1/runs/{run['id']}/stream", headers=tenant.secret)).status_code == 404


class TestCancel:
    async def test_cancel_mid_run_ends_the_stream(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input=SLOW)
        reading = asyncio.create_task(read_stream(client, tenant, f"/v1/runs/{run['id']}/stream"))
        await wait_for_status(client, tenant, run["id"], "running")
        await wait_for_event(services, run["id"], "text_chunk")
        executing = executing_task(run["id"])
        response = await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "cancelled" and response.json()["endedAt"] is not None
        events = await asyncio.wait_for(reading, 10)
        assert types(events)[:2] == ["run_started", "message_started"]
        assert "text_chunk" in types(events)
        assert events[-2]["type"] == "run_completed" and events[-2]["status"] == "cancelled"
        assert events[-1] == DONE
        assert [e["cursor"] for e in events[:-1]] == [f"{run['id']}.{i}" for i in range(1, len(events))]
        # Nothing is written after the cancel: once the executor's task for the run has ended, the stream
        # replays the same events.
        done, _ = await asyncio.wait({executing}, timeout=10)
        assert done
        assert await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream") == events
        assert (await thread_of(client, tenant, thread))["activeRunId"] is None

    async def test_cancel_a_queued_run(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread, input=SLOW)
        queued = await start_run(client, tenant, thread, multitaskStrategy="enqueue")
        response = await client.post(f"/v1/runs/{queued['id']}/cancel", headers=tenant.secret)
        assert response.json()["status"] == "cancelled"
        assert response.json()["startedAt"] is None
        events = await read_stream(client, tenant, f"/v1/runs/{queued['id']}/stream")
        assert types(events) == ["run_completed", DONE]
        await client.post(f"/v1/runs/{first['id']}/cancel", headers=tenant.secret)

    async def test_cancel_of_an_ended_run_is_a_conflict(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="quick #notools")
        response = await client.post(f"/v1/runs/{run['id']}/cancel", headers=other_tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="runs.cancel")
        await wait_for_status(client, tenant, run["id"], "completed")
        response = await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
        assert_error(response, 409, "CONFLICT", operation_id="runs.cancel", reason="RUN_ENDED")
        response = await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="runs.cancel", reason="PUBLIC_KEY_NOT_ALLOWED")


class TestRaces:
    async def test_cancels_racing_the_executor_leave_consistent_streams(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        """Cancels and interrupts at every moment of a run's life: each stream is numbered without gaps and
        ends with exactly one run_completed, agreeing with the run's final status."""

        async def one(i: int) -> tuple[str, str]:
            thread = await make_thread(client, tenant)
            run = await start_run(client, tenant, thread, input="#notools #chunks=30 #delay=1")
            await asyncio.sleep((i % 8) * 0.004)
            if i % 3 == 0:
                await start_run(client, tenant, thread, input="#notools", multitaskStrategy="interrupt")
            else:
                await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
            return thread, run["id"]

        for thread, run_id in await asyncio.gather(*(one(i) for i in range(24))):
            events = await read_stream(client, tenant, f"/v1/runs/{run_id}/stream")
            assert events[-1] == DONE
            assert [e["cursor"] for e in events[:-1]] == [f"{run_id}.{n}" for n in range(1, len(events))]
            assert types(events).count("run_completed") == 1
            final = await wait_for_status(client, tenant, run_id, "completed", "cancelled")
            assert events[-2]["status"] == final["status"]
            await wait_for_status(
                client, tenant, (await thread_of(client, tenant, thread))["activeRunId"] or run_id,
                "completed", "cancelled",
            )  # fmt: skip
