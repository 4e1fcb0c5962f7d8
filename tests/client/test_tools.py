"""Both clients, and the CLI, against a real ``threadline serve`` with runs that wait for their caller: the
stream that answers function calls with Python functions (once, even when the stream is replayed),
approvals decided through ``runs.approve``, the refusals of ``runs.submit_tool_outputs``, and ``threadline
runs approve`` / ``runs submit-outputs`` (here, to share the module's server)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest
from threadline_client import AsyncThreadline, BadRequestError, ConflictError, Threadline
from threadline_client.types import RequiredAction, RunCompleted, RunRequiresAction, ToolCallComplete

from tests.client.conftest import Served
from tests.support import threadline

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "An order's status",
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
}
ASK = 'Where is my order?\n#call=lookup_order {"order_id": "A-1001"}'


def _answers(done: list[str]) -> Any:
    def lookup_order(order_id: str) -> dict[str, str]:
        done.append(order_id)
        return {"orderId": order_id, "status": "shipped"}

    return lookup_order


async def test_the_stream_answers_function_calls_with_python_functions(served: Served) -> None:
    tenant = await served.organization("Functions")
    done: list[str] = []
    with served.sdk(tenant) as client:
        thread = client.threads.create(title="Support")
        run = client.runs.create(thread.id, input=ASK, tools=[LOOKUP])
        events = list(client.runs.stream(run.id, tools={"lookup_order": _answers(done)}))
        assert done == ["A-1001"]
        waits = [e for e in events if isinstance(e, RunRequiresAction)]
        assert len(waits) == 1 and waits[0].required_action.type == "submit_tool_outputs"
        [call] = waits[0].required_action.tool_calls
        assert (call.name, call.arguments) == ("lookup_order", {"order_id": "A-1001"})
        [complete] = [e for e in events if isinstance(e, ToolCallComplete)]
        assert (complete.tool_call_id, complete.is_error) == (call.id, False)
        assert complete.result == {"orderId": "A-1001", "status": "shipped"}
        assert isinstance(events[-1], RunCompleted) and events[-1].status == "completed"
        final = [e for e in events if e.type == "text_complete"][-1].to_dict()["text"]
        assert json.dumps(complete.result, separators=(",", ":")) in final

        # A replay shows the wait again: the helper asks the run first and runs nothing twice.
        replayed = list(client.runs.stream(run.id, tools={"lookup_order": _answers(done)}))
        assert done == ["A-1001"] and [e.cursor for e in replayed] == [e.cursor for e in events]
        ended = client.runs.get(run.id)
        assert ended.status == "completed" and ended.required_action is None
        with pytest.raises(ConflictError) as late:
            client.runs.submit_tool_outputs(run.id, {call.id: "again"})
        assert late.value.reason == "RUN_NOT_WAITING"


async def test_async_functions_and_an_incomplete_answer(served: Served) -> None:
    tenant = await served.organization("Async functions")
    two = ASK + '\n#call=lookup_order {"order_id": "B-2"}'
    done: list[str] = []

    async def lookup_order(order_id: str) -> str:
        done.append(order_id)
        return f"{order_id} is late"

    async with AsyncThreadline(tenant.created.secret_value, served.api_url) as client:
        thread = await client.threads.create()
        run = await client.runs.create(thread.id, input=two, tools=[LOOKUP], action_timeout_seconds=120)
        waiting = None
        async for event in client.runs.stream(run.id):  # no tools: the caller answers by hand
            if isinstance(event, RunRequiresAction):
                waiting = event.required_action
                break
        assert waiting is not None and len(waiting.tool_calls) == 2
        first, second = waiting.tool_calls
        fetched = await client.runs.get(run.id)
        assert fetched.status == "requires_action" and fetched.required_action == waiting
        with pytest.raises(BadRequestError) as incomplete:
            await client.runs.submit_tool_outputs(run.id, {first.id: "only one"})
        assert incomplete.value.reason == "TOOL_OUTPUTS_INCOMPLETE"
        assert incomplete.value.missing_context == [second.id]
        with pytest.raises(BadRequestError) as unknown:
            await client.runs.submit_tool_outputs(run.id, {first.id: 1, second.id: 2, "call_nope": 3})
        assert unknown.value.reason == "UNKNOWN_TOOL_CALL"

        events = [e async for e in client.runs.stream(run.id, tools={"lookup_order": lookup_order})]
        assert done == ["A-1001", "B-2"]
        results = {e.tool_call_id: e.result for e in events if isinstance(e, ToolCallComplete)}
        assert results == {first.id: "A-1001 is late", second.id: "B-2 is late"}
        assert isinstance(events[-1], RunCompleted) and events[-1].status == "completed"


def test_approvals_through_the_client(served_sync: tuple[Served, str]) -> None:
    served, key = served_sync
    needs_approval = [{"type": "builtin", "name": "create_artifact", "requireApproval": True}]
    ask = '#call=create_artifact {"name": "refund.txt", "content": "refund 40"}'
    with Threadline(key, served.api_url) as client:
        for decide, expected_error in ((True, False), (False, True)):
            thread = client.threads.create()
            run = client.runs.create(thread.id, input=ask, tools=needs_approval)
            results = []
            for event in client.runs.stream(run.id, tools={"lookup_order": _answers([])}):
                if isinstance(event, RunRequiresAction):  # approvals are handed on unanswered
                    assert event.required_action.type == "approve_tool_calls"
                    [call] = event.required_action.tool_calls
                    if decide:
                        client.runs.approve(run.id, approved=[call.id])
                    else:
                        client.runs.approve(run.id, rejected={call.id: "Refunds need a manager"})
                elif isinstance(event, ToolCallComplete):
                    results.append(event)
            [result] = results
            assert result.is_error is expected_error
            if not decide:
                assert result.result == {"error": "rejected", "reason": "Refunds need a manager"}
            assert client.runs.get(run.id).status == "completed"
            assert len(list(client.artifacts.list(run.id))) == (1 if decide else 0)


@pytest.fixture
async def served_sync(served: Served) -> tuple[Served, str]:
    tenant = await served.organization("Approvals")
    return served, tenant.created.secret_value


def _cli(served: Served, key: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "THREADLINE_API_KEY": key, "THREADLINE_BASE_URL": served.api_url}
    return threadline(*args, env=env, check=check)


def _waiting(client: Threadline, run_id: str) -> RequiredAction:
    for event in client.runs.stream(run_id):
        if isinstance(event, RunRequiresAction):
            return event.required_action
    raise AssertionError("the run never waited")


def test_the_cli_answers_waiting_runs(served_sync: tuple[Served, str]) -> None:
    """``runs approve`` (approve all but the rejected) and ``runs submit-outputs`` (an output per call)."""
    served, key = served_sync
    two = (
        '#call=create_artifact {"name": "a.txt", "content": "a"}\n'
        '#call=create_artifact {"name": "b.txt", "content": "b"}'
    )
    with Threadline(key, served.api_url) as client:
        entries = json.dumps([{"type": "builtin", "name": "create_artifact", "requireApproval": True}])
        thread = client.threads.create().id
        bad = _cli(served, key, "runs", "create", thread, "--input", two, "--tools", "{}", check=False)
        assert bad.returncode == 2 and "JSON array" in bad.stderr
        created = _cli(served, key, "runs", "create", thread, "--input", two, "--tools", entries, "--json")
        approvals = client.runs.get(json.loads(created.stdout)["id"])
        assert approvals.tools == json.loads(entries)
        first, second = _waiting(client, approvals.id).tool_calls
        refused = _cli(served, key, "runs", "approve", approvals.id, "--reject", "call_nope", check=False)
        assert refused.returncode == 2 and "not pending" in refused.stderr and first.id in refused.stderr
        done = _cli(
            served, key, "runs", "approve", approvals.id, "--reject", second.id, "--reason", "one is enough"
        )
        assert done.stdout.startswith(approvals.id)
        results = {
            e.tool_call_id: e for e in client.runs.stream(approvals.id) if isinstance(e, ToolCallComplete)
        }
        assert results[first.id].is_error is False
        assert results[second.id].result == {"error": "rejected", "reason": "one is enough"}

        outputs = client.runs.create(client.threads.create().id, input=ASK, tools=[LOOKUP])
        [call] = _waiting(client, outputs.id).tool_calls
        wrong = _cli(served, key, "runs", "approve", outputs.id, check=False)
        assert wrong.returncode == 1 and "waits for submit_tool_outputs" in wrong.stderr
        missing = _cli(served, key, "runs", "submit-outputs", outputs.id, "--output", "x=1", check=False)
        assert missing.returncode == 2 and f"no --output for {call.id}" in missing.stderr
        sent = _cli(
            served,
            key,
            "runs",
            "submit-outputs",
            outputs.id,
            "--output",
            f'{call.id}={{"status": "lost"}}',
            "--json",
        )
        assert json.loads(sent.stdout)["id"] == outputs.id
        [complete] = [e for e in client.runs.stream(outputs.id) if isinstance(e, ToolCallComplete)]
        assert complete.result == {"status": "lost"}
        again = _cli(
            served, key, "runs", "submit-outputs", outputs.id, "--output", f"{call.id}=x", check=False
        )
        assert again.returncode == 1 and "not waiting for its caller" in again.stderr


def test_a_failing_function_leaves_the_run_waiting(served_sync: tuple[Served, str]) -> None:
    """The helper never invents a result: the exception reaches the caller and the run still waits; a call
    with no function is handed on unanswered."""
    served, key = served_sync

    def broken(order_id: str) -> str:
        raise LookupError(order_id)

    with Threadline(key, served.api_url) as client:
        run = client.runs.create(client.threads.create().id, input=ASK, tools=[LOOKUP])
        with pytest.raises(LookupError, match="A-1001"):
            list(client.runs.stream(run.id, tools={"lookup_order": broken}))
        assert client.runs.get(run.id).status == "requires_action"
        handed_on = None
        for event in client.runs.stream(run.id, tools={"other": broken}):
            if isinstance(event, RunRequiresAction):  # no function for it: handed on unanswered
                handed_on = event
                break
        assert handed_on is not None and client.runs.get(run.id).status == "requires_action"
        assert client.runs.cancel(run.id).status == "cancelled"
