"""The ``openai/<model>`` provider against a local server speaking OpenAI's streaming wire format."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx2
import openai
import pytest

from tests.agent.openai_server import (
    MALFORMED,
    Behaviour,
    HttpError,
    OpenAIServer,
    Raw,
    Stall,
    chunk,
    openai_server,
    text_reply,
    tool_call,
    tool_calls_reply,
    usage_chunk,
)
from threadline.agent.models import (
    ChatMessage,
    Delta,
    ModelError,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallReady,
    ToolSpec,
    Usage,
)
from threadline.agent.openai_chat import OpenAIChatModel, openai_model
from threadline.config import Settings

KEY = "sk-test-5f3c9a0d7e1b24c8"
HELLO = [ChatMessage("user", "Hello")]


@asynccontextmanager
async def scripted(
    *script: Behaviour, timeout_seconds: float = 5.0
) -> AsyncIterator[tuple[OpenAIServer, OpenAIChatModel]]:
    async with openai_server(script) as server:
        model = OpenAIChatModel(
            "gpt-test", base_url=server.base_url, api_key=KEY, timeout_seconds=timeout_seconds
        )
        try:
            yield server, model
        finally:
            await model.aclose()


async def turn(
    model: OpenAIChatModel, messages: Sequence[ChatMessage] = HELLO, tools: Sequence[ToolSpec] = ()
) -> list[Delta]:
    return [delta async for delta in model.stream(messages, tools)]


async def failure(model: OpenAIChatModel) -> tuple[ModelError, list[Delta]]:
    """The error a turn ends with, and what it yielded before."""
    seen: list[Delta] = []

    async def play() -> None:
        async for delta in model.stream(HELLO, ()):
            seen.append(delta)

    with pytest.raises(ModelError) as caught:
        await play()
    return caught.value, seen


class TestDeltas:
    async def test_text_arrives_piece_by_piece_then_usage(self) -> None:
        async with scripted(text_reply("Hel", "lo!", prompt_tokens=9, completion_tokens=3)) as (_, model):
            assert await turn(model) == [TextDelta("Hel"), TextDelta("lo!"), Usage(9, 3)]
        assert model.name == "openai/gpt-test"

    async def test_reasoning_content_becomes_reasoning_deltas(self) -> None:
        reply = text_reply("42", reasoning=["The user asks", " for the answer."])
        async with scripted(reply) as (_, model):
            assert await turn(model) == [
                ReasoningDelta("The user asks"),
                ReasoningDelta(" for the answer."),
                TextDelta("42"),
                Usage(12, 4),
            ]

    async def test_interleaved_tool_call_pieces_are_assembled_in_index_order(self) -> None:
        reply = [
            chunk({"role": "assistant", "content": None}),
            chunk({"tool_calls": [tool_call(0, id="call_a", name="search")]}),
            chunk({"tool_calls": [tool_call(0, arguments='{"query": "ca')]}),
            chunk({"tool_calls": [tool_call(1, id="call_b", name="fetch", arguments='{"u')]}),
            chunk(
                {"tool_calls": [tool_call(1, arguments='rl": "https://exa'), tool_call(0, arguments='ts"')]}
            ),
            chunk({"tool_calls": [tool_call(0, arguments=", "), tool_call(1, arguments='mple.com/"}')]}),
            chunk({"tool_calls": [tool_call(0, arguments='"limit": 3}')]}),
            chunk(finish_reason="tool_calls"),
            usage_chunk(40, 17),
        ]
        async with scripted(reply) as (_, model):
            deltas = await turn(model)
        assert deltas == [
            ToolCallReady(ToolCall("call_a", "search", '{"query": "cats", "limit": 3}')),
            ToolCallReady(ToolCall("call_b", "fetch", '{"url": "https://example.com/"}')),
            Usage(40, 17),
        ]
        assert json.loads(deltas[0].call.arguments) == {"query": "cats", "limit": 3}  # type: ignore[union-attr]

    async def test_calls_without_finish_reason_or_usage_still_complete(self) -> None:
        """Some servers end the stream with neither; the turn still yields its calls and a zero usage."""
        reply = [
            chunk({"tool_calls": [tool_call(0, id="call_1", name="clock")]}),
            chunk({"content": "Checking."}),
        ]
        async with scripted(reply) as (_, model):
            assert await turn(model) == [
                TextDelta("Checking."),
                ToolCallReady(ToolCall("call_1", "clock", "{}")),
                Usage(),
            ]

    async def test_whole_turn_helpers_round_trip(self) -> None:
        calls = [ToolCall("call_x", "add", '{"a": 1, "b": 2}'), ToolCall("call_y", "now", "{}")]
        async with scripted(tool_calls_reply(*calls), text_reply("3")) as (server, model):
            assert await turn(model) == [*(ToolCallReady(call) for call in calls), Usage(20, 8)]
            assert await turn(model) == [TextDelta("3"), Usage(12, 4)]
            assert server.unused == 0


class TestRequest:
    async def test_the_request_carries_the_conversation_tools_and_key(self) -> None:
        messages = [
            ChatMessage("system", "Be brief."),
            ChatMessage("user", "Weather in Paris?"),
            ChatMessage("assistant", None, tool_calls=(ToolCall("call_1", "weather", '{"city": "Paris"}'),)),
            ChatMessage("tool", '{"celsius": 21}', tool_call_id="call_1"),
        ]
        schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        tools = [ToolSpec("weather", "Current weather of a city.", schema)]
        async with scripted(text_reply("21 °C.")) as (server, model):
            await turn(model, messages, tools)
        [request] = server.requests
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.body["model"] == "gpt-test"
        assert request.body["stream"] is True
        assert request.body["stream_options"] == {"include_usage": True}
        assert request.body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"celsius": 21}'},
        ]
        assert request.body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Current weather of a city.",
                    "parameters": schema,
                },
            }
        ]

    async def test_no_tools_means_no_tools_field(self) -> None:
        async with scripted(text_reply("Hi")) as (server, model):
            await turn(model)
        assert "tools" not in server.requests[0].body

    async def test_the_factory_reads_settings(self) -> None:
        async with openai_server([text_reply("Hi")]) as server:
            settings = Settings(openai_base_url=server.base_url, openai_api_key=KEY, model_timeout_seconds=3)
            model = openai_model("llama-3.1-8b", settings)
            try:
                assert await turn(model) == [TextDelta("Hi"), Usage(12, 4)]
            finally:
                await model.aclose()
        assert model.name == "openai/llama-3.1-8b"
        assert server.requests[0].body["model"] == "llama-3.1-8b"
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


class TestErrors:
    async def test_4xx_is_model_error_without_the_key(self) -> None:
        refusal = HttpError(401, f"Incorrect API key provided: {KEY}.", code="invalid_api_key")
        async with scripted(refusal) as (_, model):
            error, _ = await failure(model)
        assert error.code == "MODEL_ERROR"
        assert "401" in error.message
        assert "Incorrect API key provided" in error.message
        assert error.details == {"status": 401}
        assert KEY not in str(error)
        assert KEY not in repr(error)

    async def test_5xx_is_model_error(self) -> None:
        async with scripted(HttpError(500, "The server had an error.", type="server_error")) as (_, model):
            error, _ = await failure(model)
        assert (error.code, error.details) == ("MODEL_ERROR", {"status": 500})
        assert "500" in error.message

    async def test_an_error_event_inside_the_stream_is_model_error(self) -> None:
        overloaded = {"error": {"message": "Engine overloaded", "type": "server_error", "code": None}}
        async with scripted([chunk({"content": "Par"}), overloaded]) as (_, model):
            error, seen = await failure(model)
        assert error.code == "MODEL_ERROR"
        assert "Engine overloaded" in error.message
        assert seen == [TextDelta("Par")]

    async def test_a_stalled_stream_times_out_quickly(self) -> None:
        async with scripted(Stall([chunk({"content": "Thinking"})]), timeout_seconds=0.5) as (_, model):
            started = time.monotonic()
            error, seen = await failure(model)
            elapsed = time.monotonic() - started
        assert error.code == "MODEL_TIMEOUT"
        assert seen == [TextDelta("Thinking")]
        assert 0.4 < elapsed < 2

    async def test_a_refused_connection_is_model_unavailable(self) -> None:
        with socket.socket() as bound_not_listening:  # holding the port keeps it refused for the whole test
            bound_not_listening.bind(("127.0.0.1", 0))
            port = bound_not_listening.getsockname()[1]
            model = OpenAIChatModel(
                "gpt-test", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, timeout_seconds=2
            )
            try:
                error, _ = await failure(model)
            finally:
                await model.aclose()
        assert error.code == "MODEL_UNAVAILABLE"
        assert KEY not in str(error)

    @pytest.mark.parametrize(
        "body",
        [
            pytest.param(MALFORMED.body, id="not-json"),
            pytest.param(
                b'data: {"id": "x", "choices": [{"index": 0, "delta": "oops"}]}\n\n', id="wrong-shape"
            ),
            pytest.param(b"", id="no-events"),
        ],
    )
    async def test_a_malformed_stream_is_model_bad_response(self, body: bytes) -> None:
        async with scripted(Raw(body)) as (_, model):
            error, _ = await failure(model)
        assert error.code == "MODEL_BAD_RESPONSE"

    async def test_a_tool_call_without_id_is_model_bad_response(self) -> None:
        reply = [
            chunk({"tool_calls": [tool_call(0, name="search", arguments="{}")]}),
            chunk(finish_reason="stop"),
        ]
        async with scripted(reply) as (_, model):
            error, _ = await failure(model)
        assert error.code == "MODEL_BAD_RESPONSE"


class TestConnections:
    async def test_responses_are_released_on_every_path(self) -> None:
        """With a pool of one connection, a turn after a failed or abandoned one can only start if the
        earlier response was closed."""
        script: list[Behaviour] = [MALFORMED, HttpError(503, "busy"), Stall([chunk({"content": "a"})])]
        async with openai_server([*script, text_reply("ok")]) as server:
            http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=1))
            client = openai.AsyncOpenAI(
                base_url=server.base_url, api_key=KEY, max_retries=0, http_client=http
            )
            model = OpenAIChatModel(
                "gpt-test", base_url="unused", api_key=KEY, timeout_seconds=1, client=client
            )
            try:
                for _ in range(2):
                    await failure(model)
                deltas = model.stream(HELLO, ())
                assert await anext(deltas) == TextDelta("a")
                await deltas.aclose()  # the loop abandoning a turn (a cancelled run)
                assert await turn(model) == [TextDelta("ok"), Usage(12, 4)]
            finally:
                await client.close()
