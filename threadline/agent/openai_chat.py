"""The ``openai/<model>`` provider: any server that speaks OpenAI's streaming chat-completions protocol.

OpenAI, vLLM, Ollama, llama.cpp and LiteLLM all speak it, each with small liberties this module tolerates
(reasoning in a non-standard ``reasoning_content`` field, ids repeated on every tool-call piece, no usage at
all). What it does not tolerate is a stream it cannot interpret: that fails the turn with
``MODEL_BAD_RESPONSE`` rather than handing the loop a half-understood answer.

Failures become ``ModelError`` codes the loop and clients can branch on:

* ``MODEL_ERROR``: the server answered with an HTTP error, or an error event inside the stream;
* ``MODEL_TIMEOUT``: nothing arrived for ``timeout_seconds`` (before the first byte or between two chunks);
* ``MODEL_UNAVAILABLE``: the server could not be reached, or the connection broke mid-stream;
* ``MODEL_BAD_RESPONSE``: the stream held something that is not the protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field

import openai
from openai import AsyncStream
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall
from openai.types.shared_params import ResponseFormatJSONSchema

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
from threadline.agent.response_format import JsonSchemaFormat
from threadline.config import Settings

_MAX_SERVER_MESSAGE = 500
# The SDK builds chunks without validating them (servers differ too much for strict models), so a chunk of
# the wrong shape surfaces as one of these when it is read; they mean "not the protocol", not a bug here.
_SHAPE_ERRORS = (AttributeError, TypeError, IndexError, KeyError, ValueError)


class OpenAIChatModel:
    name: str

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        timeout_seconds: float,
        client: openai.AsyncOpenAI | None = None,
        response_format: JsonSchemaFormat | None = None,
    ) -> None:
        self.name = f"openai/{model}"
        self._response_format = response_format
        self._model = model
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._owns_client = client is None
        # Retries would multiply the time a run waits on a dead server; the loop decides what a failure means.
        # A server without authentication still gets a bearer token: the SDK refuses to send none.
        self._client = client or openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "unused", max_retries=0, timeout=timeout_seconds
        )

    @property
    def client(self) -> openai.AsyncOpenAI:
        return self._client

    async def aclose(self) -> None:
        """Release the connection pool, when this model created its client (a given client is its owner's)."""
        if self._owns_client:
            await self._client.close()

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[Delta]:
        chunks = await self._open(messages, tools)
        async with chunks:  # closes the HTTP response however the turn ends, consumer's aclose included
            turn = _Turn()
            while (chunk := await self._next(chunks)) is not None:
                try:
                    deltas = turn.read(chunk)
                except _SHAPE_ERRORS as exc:
                    raise ModelError(
                        "MODEL_BAD_RESPONSE", f"unreadable chunk from the model server: {exc}"
                    ) from exc
                for delta in deltas:
                    yield delta
            for delta in turn.finish():
                yield delta

    async def _open(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncStream[ChatCompletionChunk]:
        wire_messages = [_wire_message(message) for message in messages]
        try:
            async with asyncio.timeout(self._timeout):
                return await self._client.chat.completions.create(
                    model=self._model,
                    messages=wire_messages,
                    tools=[_wire_tool(tool) for tool in tools] if tools else openai.omit,
                    stream=True,
                    stream_options={"include_usage": True},
                    response_format=_wire_format(self._response_format),
                )
        except (TimeoutError, openai.APIError) as exc:
            raise self._error(exc) from exc

    async def _next(self, chunks: AsyncStream[ChatCompletionChunk]) -> ChatCompletionChunk | None:
        """The next chunk, or None at the end. The deadline is per chunk because the HTTP client's read
        timeout need not fire on a server that keeps the connection alive but stops producing tokens."""
        try:
            async with asyncio.timeout(self._timeout):
                return await anext(chunks)
        except StopAsyncIteration:
            return None
        except (TimeoutError, openai.APIError) as exc:
            raise self._error(exc) from exc
        except ValueError as exc:  # a ``data:`` line that is not JSON
            raise ModelError("MODEL_BAD_RESPONSE", f"malformed chunk from the model server: {exc}") from exc

    def _error(self, exc: TimeoutError | openai.APIError) -> ModelError:
        # A plain mapping rather than a context manager: contextlib re-assigns ``__traceback__`` on the
        # exceptions passing through it, which a frozen dataclass such as ``ModelError`` refuses.
        if isinstance(exc, TimeoutError | openai.APITimeoutError):
            return ModelError("MODEL_TIMEOUT", f"the model server sent nothing for {self._timeout:g} s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            reason = f"{type(cause).__name__}: {cause}" if cause is not None else exc.message
            return ModelError("MODEL_UNAVAILABLE", f"the model server is unreachable or hung up ({reason})")
        if isinstance(exc, openai.APIStatusError):
            said = self._redact(_server_message(exc.body))
            return ModelError(
                "MODEL_ERROR",
                f"the model server answered HTTP {exc.status_code}" + (f": {said}" if said else ""),
                {"status": exc.status_code},
            )
        if isinstance(exc, openai.APIResponseValidationError):
            return ModelError("MODEL_BAD_RESPONSE", "the model server's answer did not parse")
        # An ``{"error": ...}`` event inside an otherwise good stream.
        return ModelError("MODEL_ERROR", f"the model server reported an error: {self._redact(exc.message)}")

    def _redact(self, text: str | None) -> str | None:
        """Some compatible servers echo the key they refused, and the message outlives the request."""
        if text is None:
            return None
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return text[:_MAX_SERVER_MESSAGE]


def openai_model(
    model: str,
    settings: Settings,
    client: openai.AsyncOpenAI | None = None,
    response_format: JsonSchemaFormat | None = None,
) -> OpenAIChatModel:
    """``client``: one shared by every run of the process (one connection pool); made here if None.
    ``response_format``: sent with every turn (chat completions' ``response_format``)."""
    key = settings.openai_api_key
    return OpenAIChatModel(
        model,
        base_url=settings.openai_base_url,
        api_key=key.get_secret_value() if key is not None else None,
        timeout_seconds=settings.model_timeout_seconds,
        client=client,
        response_format=response_format,
    )


@dataclass
class _PendingCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class _Turn:
    """What one turn's chunks add up to. Tool calls are held back until complete because the loop runs a
    tool only with its whole arguments; usage is held back because it comes last and only once."""

    def __init__(self) -> None:
        self._calls: dict[int, _PendingCall] = {}
        self._usage: Usage | None = None
        self._chunks = 0

    def read(self, chunk: ChatCompletionChunk) -> list[Delta]:
        self._chunks += 1
        if chunk.usage is not None:  # the last one wins: some servers send running totals on every chunk
            self._usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
        if not chunk.choices:
            return []
        choice = chunk.choices[0]
        deltas: list[Delta] = []
        if reasoning := _reasoning(choice.delta):
            deltas.append(ReasoningDelta(reasoning))
        if choice.delta.content:
            deltas.append(TextDelta(choice.delta.content))
        for piece in choice.delta.tool_calls or ():
            self._add(piece)
        if choice.finish_reason is not None:
            deltas.extend(self._complete_calls())
        return deltas

    def finish(self) -> list[Delta]:
        if self._chunks == 0:
            # A 200 that is not an event stream (a proxy's page, a server ignoring ``stream``) decodes as
            # no events at all; an empty successful turn would hide that.
            raise ModelError("MODEL_BAD_RESPONSE", "the model server's stream held no chunks")
        return [*self._complete_calls(), self._usage or Usage()]

    def _add(self, piece: ChoiceDeltaToolCall) -> None:
        index = getattr(piece, "index", None)
        if not isinstance(index, int):  # servers that omit it send each call whole, or ids on every piece
            last = max(self._calls, default=-1)
            is_new = last < 0 or (piece.id is not None and piece.id != self._calls[last].id)
            index = last + 1 if is_new else last
        call = self._calls.setdefault(index, _PendingCall())
        # Only the first piece must carry the id and name; servers that repeat them must not double them.
        call.id = call.id or piece.id
        if piece.function is not None:
            call.name = call.name or piece.function.name
            if piece.function.arguments:
                call.arguments.append(piece.function.arguments)

    def _complete_calls(self) -> list[Delta]:
        ready: list[Delta] = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.id or not call.name:
                raise ModelError("MODEL_BAD_RESPONSE", f"tool call {index} arrived without an id or a name")
            # No arguments at all is a call of a tool without parameters, which some servers send as "".
            ready.append(ToolCallReady(ToolCall(call.id, call.name, "".join(call.arguments) or "{}")))
        self._calls.clear()
        return ready


def _reasoning(delta: ChoiceDelta) -> str | None:
    """vLLM, DeepSeek and llama.cpp send ``reasoning_content``; OpenRouter and newer vLLM ``reasoning``."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _server_message(body: object) -> str | None:
    if isinstance(body, Mapping):
        message = body.get("message")
        return message if isinstance(message, str) else None
    return body if isinstance(body, str) and body else None


def _wire_message(message: ChatMessage) -> ChatCompletionMessageParam:
    match message.role:
        case "system":
            return {"role": "system", "content": message.content or ""}
        case "user":
            return {"role": "user", "content": message.content or ""}
        case "assistant":
            if not message.tool_calls:
                return {"role": "assistant", "content": message.content or ""}
            wire: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ],
            }
            return wire
        case "tool":
            if message.tool_call_id is None:
                raise ValueError("a tool message must name the call it answers (tool_call_id)")
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}


def _wire_tool(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _wire_format(value: JsonSchemaFormat | None) -> ResponseFormatJSONSchema | openai.Omit:
    """Chat completions' ``response_format``; omitted for text, every server's default (some refuse the
    field)."""
    if value is None:
        return openai.omit
    return {
        "type": "json_schema",
        "json_schema": {"name": value.name, "schema": value.schema_, "strict": value.strict},
    }
