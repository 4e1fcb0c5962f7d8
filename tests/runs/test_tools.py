"""Runs that offer the caller's tools: ``tools`` validated on create, ``requires_action`` with its answers
(tool outputs, approvals), expiry and cancel while waiting; in both shapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.runs.helpers import DONE, get_run, read_stream, start_run, types, wait_for_status
from tests.support import Tenant, assert_error, make_tenant, make_thread
from threadline.app import create_app
from threadline.config import Settings
from threadline.kit.clock import ManualClock
from threadline.runtime import Services

LOOKUP = {"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}
REFUND = {"type": "function", "name": "refund"}


def call_lines(*calls: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(f"#call={name} {json.dumps(arguments)}" for name, arguments in calls)


async def post(client: httpx.AsyncClient, tenant: Tenant, path: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post(path, headers=tenant.secret, json=body)


async def waiting_run(
    client: httpx.AsyncClient, tenant: Tenant, tools: list[dict[str, Any]], *calls: tuple[str, dict[str, Any]]
) -> dict[str, Any]:
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, tools=tools, input=call_lines(*calls))
    return await wait_for_status(client, tenant, run["id"], "requires_action")


class TestValidation:
    @pytest.mark.parametrize(
        "tools",
        [
            [{"type": "function", "name": "has space"}],
            [{"type": "function", "name": "x" * 65}],
            [{"type": "function", "name": "f", "parameters": {"type": "nonsense"}}],
            [{"type": "function", "name": "f", "parameters": {"properties": 3}}],
            [{"type": "builtin", "name": "rm_rf"}],
            [{"type": "shell", "name": "f"}],
            [{"type": "mcp", "serverId": "mcp_x", "requireApproval": "sometimes"}],
            [{"type": "function", "name": f"f{i}"} for i in range(65)],
        ],
    )
    async def test_a_bad_entry_is_400(self, client: httpx.AsyncClient, tenant: Tenant, tools: Any) -> None:
        thread = await make_thread(client, tenant)
        response = await post(client, tenant, f"/v1/threads/{thread}/runs", {"tools": tools})
        assert_error(response, 400, "BAD_REQUEST", operation_id="runs.create", reason="VALIDATION_FAILED")
        assert "tools" in response.json()["message"]

    async def test_two_tools_of_one_name_conflict(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        tools = [{"type": "builtin", "name": "query_logs"}, {"type": "function", "name": "query_logs"}]
        response = await post(client, tenant, f"/v1/threads/{thread}/runs", {"tools": tools})
        assert_error(response, 400, "BAD_REQUEST", operation_id="runs.create", reason="TOOL_NAME_CONFLICT")

    @pytest.mark.parametrize("seconds", [0, 86_401, "60"])
    async def test_action_timeout_is_bounded(
        self, client: httpx.AsyncClient, tenant: Tenant, seconds: Any
    ) -> None:
        thread = await make_thread(client, tenant)
        response = await post(client, tenant, f"/v1/threads/{thread}/runs", {"actionTimeoutSeconds": seconds})
        assert_error(response, 400, "BAD_REQUEST", operation_id="runs.create", reason="VALIDATION_FAILED")

    async def test_the_run_shows_its_tools_with_defaults(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(
            client, tenant, thread, tools=[REFUND, {"type": "builtin", "name": "query_logs"}]
        )
        assert run["tools"] == [
            {
                "type": "function",
                "name": "refund",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            },
            {"type": "builtin", "name": "query_logs", "requireApproval": False},
        ]
        assert run["actionTimeoutSeconds"] == 600
        assert run["requiredAction"] is None
        default = await start_run(client, tenant, await make_thread(client, tenant))
        assert default["tools"] is None


class TestFunctionTools:
    async def test_the_run_waits_for_outputs_then_goes_on(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        run = await waiting_run(
            client, tenant, [LOOKUP, REFUND], ("lookup_order", {"id": 7}), ("refund", {"amount": 3})
        )
        action = run["requiredAction"]
        assert action["type"] == "submit_tool_outputs"
        assert action["toolCalls"] == [
            {"id": "call_1", "name": "lookup_order", "arguments": {"id": 7}},
            {"id": "call_2", "name": "refund", "arguments": {"amount": 3}},
        ]
        expires = datetime.fromisoformat(action["expiresAt"])
        assert 590 < (expires - datetime.now(UTC)).total_seconds() <= 600
        assert services.executor is not None
        assert run["id"] not in services.executor._running  # no task, no slot
        thread = await client.get(f"/v1/threads/{run['threadId']}", headers=tenant.secret)
        assert thread.json()["activeRunId"] == run["id"]  # the thread stays busy
        busy = await post(client, tenant, f"/v1/threads/{run['threadId']}/runs", {})
        assert_error(busy, 409, "CONFLICT", operation_id="runs.create", reason="RUN_ACTIVE")

        path = f"/v1/runs/{run['id']}/tool-outputs"
        incomplete = await post(
            client, tenant, path, {"toolOutputs": [{"toolCallId": "call_1", "output": 1}]}
        )
        assert_error(
            incomplete,
            400,
            "BAD_REQUEST",
            operation_id="runs.submitToolOutputs",
            reason="TOOL_OUTPUTS_INCOMPLETE",
            missing=["call_2"],
        )
        unknown = await post(client, tenant, path, {"toolOutputs": [{"toolCallId": "call_9", "output": 1}]})
        assert_error(
            unknown, 400, "BAD_REQUEST", operation_id="runs.submitToolOutputs", reason="UNKNOWN_TOOL_CALL"
        )
        approvals = await post(
            client,
            tenant,
            f"/v1/runs/{run['id']}/approvals",
            {"decisions": [{"toolCallId": "call_1", "approve": True}]},
        )
        assert_error(approvals, 409, "CONFLICT", operation_id="runs.approve", reason="RUN_NOT_WAITING")

        outputs = [
            {"toolCallId": "call_2", "output": "refunded"},
            {"toolCallId": "call_1", "output": {"status": "shipped", "items": [1, 2]}},
        ]
        answered = await post(client, tenant, path, {"toolOutputs": outputs})
        assert answered.status_code == 200, answered.text
        assert answered.json()["status"] == "running"
        assert answered.json()["requiredAction"] is None
        done = await wait_for_status(client, tenant, run["id"], "completed")
        assert done["error"] is None

        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events) == [
            "run_started", "tool_call_start", "tool_call_start", "run_requires_action",
            "tool_call_complete", "tool_call_complete",
            "message_started", *["text_chunk"] * (len(events) - 10), "text_complete", "run_completed", DONE,
        ]  # fmt: skip
        assert events[3]["requiredAction"] == action
        completes = {e["toolCallId"]: e for e in events if e != DONE and e["type"] == "tool_call_complete"}
        assert completes["call_1"]["result"] == {"status": "shipped", "items": [1, 2]}
        assert completes["call_2"] == {**completes["call_2"], "result": "refunded", "isError": False}
        text = next(e["text"] for e in events if e != DONE and e["type"] == "text_complete")
        assert text == 'lookup_order returned {"status":"shipped","items":[1,2]}; refund returned "refunded".'
        late = await post(client, tenant, path, {"toolOutputs": outputs})
        assert_error(late, 409, "CONFLICT", operation_id="runs.submitToolOutputs", reason="RUN_NOT_WAITING")

    async def test_other_organizations_cannot_answer(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        run = await waiting_run(client, tenant, [LOOKUP], ("lookup_order", {}))
        body = {"toolOutputs": [{"toolCallId": "call_1", "output": 1}]}
        response = await post(client, other_tenant, f"/v1/runs/{run['id']}/tool-outputs", body)
        assert_error(response, 404, "NOT_FOUND", operation_id="runs.submitToolOutputs")
        public = await client.post(f"/v1/runs/{run['id']}/tool-outputs", headers=tenant.public, json=body)
        assert_error(
            public, 403, "FORBIDDEN", operation_id="runs.submitToolOutputs", reason="PUBLIC_KEY_NOT_ALLOWED"
        )
        minted = await post(client, tenant, f"/v1/runs/{run['id']}/stream-tokens", {})
        token = minted.json()["token"]
        for path in ("tool-outputs", "approvals"):
            refused = await client.post(f"/v1/runs/{run['id']}/{path}", params={"token": token}, json=body)
            assert refused.status_code == 401, refused.text  # a stream token opens its stream, nothing else
        assert (await get_run(client, tenant, run["id"]))["status"] == "requires_action"

    async def test_a_call_of_a_tool_not_offered_fails_and_the_run_goes_on(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, tools=[LOOKUP], input=call_lines(("nothing", {})))
        done = await wait_for_status(client, tenant, run["id"], "completed")
        events = await read_stream(client, tenant, f"/v1/runs/{done['id']}/stream")
        [complete] = [e for e in events if e != DONE and e["type"] == "tool_call_complete"]
        assert complete["isError"] is True
        assert "run_requires_action" not in types(events)


class TestApprovals:
    async def test_approvals_come_first_then_outputs(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        tools = [
            {"type": "builtin", "name": "create_artifact", "requireApproval": True},
            {"type": "builtin", "name": "query_logs", "requireApproval": True},
            LOOKUP,
        ]
        artifact = {"name": "a.md", "content": "hello"}
        run = await waiting_run(
            client,
            tenant,
            tools,
            ("create_artifact", artifact),
            ("lookup_order", {"id": 1}),
            ("query_logs", {}),
        )
        action = run["requiredAction"]
        assert action["type"] == "approve_tool_calls"
        assert [c["name"] for c in action["toolCalls"]] == ["create_artifact", "query_logs"]
        outputs = {"toolOutputs": [{"toolCallId": "call_2", "output": 1}]}
        early = await post(client, tenant, f"/v1/runs/{run['id']}/tool-outputs", outputs)
        assert_error(early, 409, "CONFLICT", operation_id="runs.submitToolOutputs", reason="RUN_NOT_WAITING")
        decisions = [
            {"toolCallId": "call_1", "approve": True},
            {"toolCallId": "call_3", "approve": False, "reason": "not now"},
        ]
        decided = await post(client, tenant, f"/v1/runs/{run['id']}/approvals", {"decisions": decisions})
        assert decided.status_code == 200, decided.text
        again = await wait_for_status(client, tenant, run["id"], "requires_action")
        assert again["requiredAction"]["type"] == "submit_tool_outputs"
        assert [c["id"] for c in again["requiredAction"]["toolCalls"]] == ["call_2"]
        answered = await post(client, tenant, f"/v1/runs/{run['id']}/tool-outputs", outputs)
        assert answered.status_code == 200, answered.text
        await wait_for_status(client, tenant, run["id"], "completed")

        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        completes = {e["toolCallId"]: e for e in events if e != DONE and e["type"] == "tool_call_complete"}
        assert completes["call_3"]["result"] == {"error": "rejected", "reason": "not now"}
        assert completes["call_3"]["isError"] is True
        assert completes["call_1"]["isError"] is False  # approved: the artifact was made
        assert [e["name"] for e in events if e != DONE and e["type"] == "artifact"] == ["a.md"]
        assert types(events).count("run_requires_action") == 2


class TestEndingWhileWaiting:
    async def test_cancel_answers_every_pending_call_with_an_error(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        run = await waiting_run(client, tenant, [LOOKUP], ("lookup_order", {}), ("lookup_order", {"b": 1}))
        cancelled = await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events)[-4:] == ["tool_call_complete", "tool_call_complete", "run_completed", DONE]
        assert all(e["isError"] for e in events[-4:-2])
        thread = await client.get(f"/v1/threads/{run['threadId']}", headers=tenant.secret)
        assert thread.json()["activeRunId"] is None

    async def test_an_unanswered_wait_expires(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        assert services.executor is not None
        clock = ManualClock(datetime.now(UTC))
        services.executor.clock = clock
        thread = await make_thread(client, tenant)
        run = await start_run(
            client,
            tenant,
            thread,
            tools=[LOOKUP],
            input=call_lines(("lookup_order", {})),
            actionTimeoutSeconds=5,
        )
        await wait_for_status(client, tenant, run["id"], "requires_action")
        clock.advance(4.9)
        assert await services.executor.expire_actions() == 0
        clock.advance(0.1)
        assert await services.executor.expire_actions() == 1
        ended = await get_run(client, tenant, run["id"])
        assert ended["status"] == "failed"
        assert ended["error"]["code"] == "ACTION_EXPIRED"
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events)[-4:] == ["tool_call_complete", "error", "run_completed", DONE]
        assert events[-4]["isError"] is True


class TestRestart:
    async def test_a_waiting_run_survives_a_restart(self, settings: Settings) -> None:
        """Nothing of a waiting run lives in a process: a new one takes the answer and continues it."""
        first = create_app(settings, chores=False)
        async with first.router.lifespan_context(first):
            tenant = await make_tenant(first.state.runtime.services, "restart")
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=first), base_url="http://t"
            ) as client:
                run = await waiting_run(client, tenant, [LOOKUP], ("lookup_order", {"id": 1}))
        second = create_app(settings, chores=False)
        async with (
            second.router.lifespan_context(second),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=second), base_url="http://t") as client,
        ):
            body = {"toolOutputs": [{"toolCallId": "call_1", "output": "ok"}]}
            answered = await post(client, tenant, f"/v1/runs/{run['id']}/tool-outputs", body)
            assert answered.status_code == 200, answered.text
            done = await wait_for_status(client, tenant, run["id"], "completed")
            assert done["error"] is None
