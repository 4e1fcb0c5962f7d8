"""Runs on ``openai/<model>`` against a local server speaking the OpenAI streaming wire format: the whole
loop (text, reasoning, tool calls split across chunks, usage) and its failures, in both shapes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest
from pydantic import SecretStr

from tests.agent.openai_server import (
    MALFORMED,
    Behaviour,
    HttpError,
    OpenAIServer,
    Stall,
    openai_server,
    text_reply,
    tool_calls_reply,
)
from tests.runs.helpers import DONE, read_stream, start_run, types, wait_for_status
from tests.support import Tenant, make_tenant, make_thread
from threadline.agent.models import ToolCall
from threadline.app import create_app
from threadline.config import Settings


@asynccontextmanager
async def api_with_model(
    settings: Settings, script: Sequence[Behaviour]
) -> AsyncIterator[tuple[httpx.AsyncClient, Tenant, OpenAIServer]]:
    async with openai_server(script) as server:
        configured = settings.model_copy(
            update={
                "openai_base_url": server.base_url,
                "openai_api_key": SecretStr("sk-upstream-secret"),
                "model_timeout_seconds": 0.5,
            }
        )
        app = create_app(configured, chores=False)
        async with app.router.lifespan_context(app):
            tenant = await make_tenant(app.state.runtime.services, "openai")
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                yield client, tenant, server


async def test_a_run_with_tool_calls_reasoning_and_usage(settings: Settings) -> None:
    report = {"name": "report.md", "mimeType": "text/markdown", "content": "# Checkout\n\nAll good."}
    script = [
        tool_calls_reply(
            ToolCall("call_a", "search_messages", json.dumps({"query": "checkout"})),
            ToolCall("call_b", "create_artifact", json.dumps(report)),
            prompt_tokens=30,
            completion_tokens=9,
        ),
        text_reply("The check", "out is fine.", reasoning=["Both tools ", "answered."], prompt_tokens=50),
    ]
    async with api_with_model(settings, script) as (client, tenant, server):
        thread = await make_thread(client, tenant)
        run = await start_run(
            client, tenant, thread, model="openai/gpt-test", instructions="Be exact.", input="Is checkout ok?"
        )
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events) == [
            "run_started",
            "tool_call_start", "tool_call_complete",
            "tool_call_start", "artifact", "tool_call_complete",
            "message_started", "reasoning_chunk", "reasoning_chunk",
            "text_chunk", "text_chunk", "text_complete",
            "run_completed", DONE,
        ]  # fmt: skip
        assert events[0]["model"] == "openai/gpt-test"
        assert events[1]["arguments"] == {"query": "checkout"}  # whole, though streamed in pieces
        assert events[3]["arguments"] == report
        assert events[4]["content"] == report["content"]
        assert events[11]["text"] == "The checkout is fine."
        assert events[-2]["usage"] == {"inputTokens": 80, "outputTokens": 13}
        done = await wait_for_status(client, tenant, run["id"], "completed")
        assert done["usage"] == {"inputTokens": 80, "outputTokens": 13}

        first, second = (request.body for request in server.requests)
        assert first["model"] == "gpt-test" and first["stream"] is True
        assert first["messages"][0] == {"role": "system", "content": "Be exact."}
        assert first["messages"][-1] == {"role": "user", "content": "Is checkout ok?"}
        assert {tool["function"]["name"] for tool in first["tools"]} == {
            "search_messages", "query_logs", "create_artifact"
        }  # fmt: skip
        assert server.requests[0].headers["authorization"] == "Bearer sk-upstream-secret"
        # The second turn carries the first one's calls and their results.
        assistant, *results = second["messages"][-3:]
        assert [call["id"] for call in assistant["tool_calls"]] == ["call_a", "call_b"]
        assert [(r["role"], r["tool_call_id"]) for r in results] == [("tool", "call_a"), ("tool", "call_b")]
        assert json.loads(results[1]["content"])["name"] == "report.md"


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [
        (HttpError(401, "Incorrect API key provided: sk-upstream-secret"), "MODEL_ERROR"),
        (HttpError(500, "overloaded"), "MODEL_ERROR"),
        (Stall(text_reply("partial")[:1], seconds=5), "MODEL_TIMEOUT"),
        (MALFORMED, "MODEL_BAD_RESPONSE"),
    ],
)
async def test_provider_failures_end_the_run_failed(
    settings: Settings, behaviour: Behaviour, code: str
) -> None:
    async with api_with_model(settings, [behaviour]) as (client, tenant, _server):
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, model="openai/gpt-test", input="hello")
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events)[-3:] == ["error", "run_completed", DONE]
        assert events[-3]["code"] == code
        assert "sk-upstream-secret" not in events[-3]["message"]
        assert events[-2]["status"] == "failed"
        failed = await wait_for_status(client, tenant, run["id"], "failed")
        assert failed["error"]["code"] == code
