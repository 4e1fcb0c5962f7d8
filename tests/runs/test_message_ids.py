"""Every ``messageId`` a run's events carry names a message that can be read once the run has ended: turns
that only reasoned and called tools, and turns cut off by a failure or a cancel, included. With the offline
model and with the OpenAI-compatible one, in both shapes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from tests.agent.openai_server import Stall, chunk, text_reply, tool_calls_reply
from tests.runs.helpers import (
    SLOW,
    executing_task,
    read_stream,
    start_run,
    types,
    wait_for_event,
    wait_for_status,
)
from tests.runs.test_openai_runs import api_with_model
from tests.support import Tenant, make_thread
from threadline.agent.models import ToolCall
from threadline.config import Settings
from threadline.runtime import Services


async def announced_messages(
    client: httpx.AsyncClient, tenant: Tenant, thread: str, events: list[Any]
) -> dict[str, dict[str, Any]]:
    """Every message the events name, read back (each must be 200), by id in the order first named."""
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, dict) or "messageId" not in event or event["messageId"] in found:
            continue
        response = await client.get(
            f"/v1/threads/{thread}/messages/{event['messageId']}", headers=tenant.secret
        )
        assert response.status_code == 200, (event, response.text)
        found[event["messageId"]] = response.json()
    return found


def streamed_text(events: list[Any], message_id: str) -> str:
    return "".join(e["delta"] for e in events if e != "[DONE]" and e["type"] == "text_chunk" and
                   e["messageId"] == message_id)  # fmt: skip


async def listed(client: httpx.AsyncClient, tenant: Tenant, thread: str) -> list[dict[str, Any]]:
    response = await client.get(
        f"/v1/threads/{thread}/messages", headers=tenant.secret, params={"limit": 100}
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["data"]
    return items


class TestOfflineModel:
    async def test_turns_that_only_reason_and_call_tools_are_stored(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="How is checkout doing?")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        await wait_for_status(client, tenant, run["id"], "completed")
        messages = await announced_messages(client, tenant, thread, events)
        assert len(messages) == 3  # investigate, summarise, answer
        investigate, summarise, answer = messages.values()
        assert investigate["content"] == "" and investigate["role"] == "assistant"
        assert investigate["metadata"] == {"toolCalls": "search_messages,query_logs"}
        assert summarise["content"] == "" and summarise["metadata"] == {"toolCalls": "create_artifact"}
        assert answer["content"] == streamed_text(events, answer["id"]) != ""
        assert answer["metadata"] == {}
        assert all(m["runId"] == run["id"] for m in messages.values())
        # The thread's timeline lists them in the order they were announced, after the input.
        timeline = await listed(client, tenant, thread)
        assert [m["id"] for m in timeline][1:] == list(messages)
        assert timeline[0]["role"] == "user"
        # Search never finds a turn without text.
        response = await client.get(
            "/v1/search/messages", headers=tenant.secret, params={"q": "summary", "threadId": thread}
        )
        assert response.status_code == 200, response.text
        assert [hit["id"] for hit in response.json()["data"]] == [answer["id"]]

    async def test_a_turn_cut_off_by_a_failure(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="explain #fail")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert "text_complete" not in types(events) and "message_started" in types(events)
        await wait_for_status(client, tenant, run["id"], "failed")
        [message] = (await announced_messages(client, tenant, thread, events)).values()
        assert message["content"] == "" and message["metadata"] == {"incomplete": "failed"}

    async def test_a_turn_cut_off_by_a_cancel_keeps_its_streamed_text(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input=SLOW)
        await wait_for_event(services, run["id"], "text_chunk")
        executing = executing_task(run["id"])
        response = await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
        assert response.status_code == 200, response.text
        await asyncio.wait({executing}, timeout=10)  # nothing more is written for the run after this
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        [message] = (await announced_messages(client, tenant, thread, events)).values()
        assert message["content"] == streamed_text(events, message["id"])
        assert message["content"].startswith("word1 ")
        assert message["metadata"] == {"incomplete": "cancelled"}

    async def test_the_next_run_does_not_send_textless_turns_to_the_model(self, settings: Settings) -> None:
        # The OpenAI-compatible server records what the model is sent: the offline run's tool turns
        # (empty, stored) are not in the history of the next run.
        async with api_with_model(settings, [text_reply("Fine.")]) as (client, tenant, server):
            thread = await make_thread(client, tenant)
            first = await start_run(client, tenant, thread, input="How is checkout doing?")
            await wait_for_status(client, tenant, first["id"], "completed")
            second = await start_run(client, tenant, thread, model="openai/gpt-test", input="And now?")
            await wait_for_status(client, tenant, second["id"], "completed")
            sent = server.requests[0].body["messages"]
            assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
            assert all(m["content"] for m in sent)


class TestOpenAIModel:
    async def test_a_reasoning_turn_that_calls_tools_is_stored(self, settings: Settings) -> None:
        calls = tool_calls_reply(
            ToolCall("call_a", "search_messages", json.dumps({"query": "checkout"})),
            ToolCall("call_b", "query_logs", "{}"),
        )
        calls_turn = [calls[0], chunk({"reasoning_content": "Look it up first."}), *calls[1:]]
        # A turn with neither text nor reasoning announces no message.
        silent_calls = tool_calls_reply(ToolCall("call_c", "query_logs", "{}"))
        script = [calls_turn, silent_calls, text_reply("All ", "good.", reasoning=["Done."])]
        async with api_with_model(settings, script) as (client, tenant, _server):
            thread = await make_thread(client, tenant)
            run = await start_run(client, tenant, thread, model="openai/gpt-test", input="Is checkout ok?")
            events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
            await wait_for_status(client, tenant, run["id"], "completed")
            assert types(events).count("message_started") == 2
            tools_turn, answer = (await announced_messages(client, tenant, thread, events)).values()
            assert tools_turn["content"] == ""
            assert tools_turn["metadata"] == {"toolCalls": "search_messages,query_logs"}
            assert answer["content"] == "All good." and answer["metadata"] == {}
            assert [m["id"] for m in await listed(client, tenant, thread)][1:] == [
                tools_turn["id"],
                answer["id"],
            ]

    async def test_a_turn_cut_off_by_a_timeout(self, settings: Settings) -> None:
        stalled = Stall(
            [chunk({"role": "assistant", "content": "Part"}), chunk({"content": "ial"})], seconds=5
        )
        async with api_with_model(settings, [stalled]) as (client, tenant, _server):
            thread = await make_thread(client, tenant)
            run = await start_run(client, tenant, thread, model="openai/gpt-test", input="hello")
            events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
            failed = await wait_for_status(client, tenant, run["id"], "failed")
            assert failed["error"]["code"] == "MODEL_TIMEOUT"
            [message] = (await announced_messages(client, tenant, thread, events)).values()
            assert message["content"] == "Partial"
            assert message["metadata"] == {"incomplete": "failed"}
