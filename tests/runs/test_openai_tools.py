"""Function tools on ``openai/<model>``: passed to the provider as chat-completions tools, their outputs
sent back as ``tool`` messages after the wait, and a thread whose run ended with a call unanswered still a
valid conversation for the next run (no ``tool_call_id`` without its result, none without its call)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import SecretStr

from tests.agent.openai_server import openai_server, text_reply, tool_calls_reply
from tests.runs.helpers import start_run, wait_for_status
from tests.support import make_tenant, make_thread
from threadline.agent.models import ToolCall
from threadline.app import create_app
from threadline.config import Settings

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "An order by id.",
    "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
}


def assert_valid_conversation(messages: list[dict[str, Any]]) -> None:
    """Every call answered by a ``tool`` message right after its assistant turn, every answer to a call."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, f"unanswered calls {open_calls} before {message}"
        open_calls = {call["id"] for call in message.get("tool_calls") or []}
    assert not open_calls


async def test_function_tools_through_chat_completions(settings: Settings) -> None:
    script = [
        tool_calls_reply(ToolCall("call_f", "lookup_order", json.dumps({"id": 7}))),
        text_reply("Order 7 has shipped."),
        tool_calls_reply(ToolCall("call_g", "lookup_order", json.dumps({"id": 8}))),
        text_reply("Hello again."),
    ]
    async with openai_server(script) as server:
        configured = settings.model_copy(
            update={"openai_base_url": server.base_url, "openai_api_key": SecretStr("sk-upstream")}
        )
        app = create_app(configured, chores=False)
        async with app.router.lifespan_context(app):
            tenant = await make_tenant(app.state.runtime.services, "openai-tools")
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                thread = await make_thread(client, tenant)
                model = "openai/gpt-test"
                run = await start_run(
                    client, tenant, thread, model=model, tools=[LOOKUP], input="Where is 7?"
                )
                waiting = await wait_for_status(client, tenant, run["id"], "requires_action")
                assert waiting["requiredAction"]["toolCalls"] == [
                    {"id": "call_f", "name": "lookup_order", "arguments": {"id": 7}}
                ]
                outputs = {"toolOutputs": [{"toolCallId": "call_f", "output": {"status": "shipped"}}]}
                answer = await client.post(
                    f"/v1/runs/{run['id']}/tool-outputs", headers=tenant.secret, json=outputs
                )
                assert answer.status_code == 200, answer.text
                await wait_for_status(client, tenant, run["id"], "completed")

                # A second run waits on a call and is cancelled: its call is never answered.
                second = await start_run(client, tenant, thread, model=model, tools=[LOOKUP], input="And 8?")
                await wait_for_status(client, tenant, second["id"], "requires_action")
                cancel = await client.post(f"/v1/runs/{second['id']}/cancel", headers=tenant.secret)
                assert cancel.status_code == 200
                third = await start_run(client, tenant, thread, model=model, input="Hello?")
                await wait_for_status(client, tenant, third["id"], "completed")

    first, after_outputs, _, last = (request.body for request in server.requests)
    assert first["tools"] == [
        {"type": "function", "function": {k: LOOKUP[k] for k in ("name", "description", "parameters")}}
    ]
    assistant, result = after_outputs["messages"][-2:]
    assert [call["id"] for call in assistant["tool_calls"]] == ["call_f"]
    assert (result["role"], result["tool_call_id"]) == ("tool", "call_f")
    assert json.loads(result["content"]) == {"status": "shipped"}
    for body in (first, after_outputs, last):
        assert_valid_conversation(body["messages"])
    assert last["messages"][-1] == {"role": "user", "content": "Hello?"}
