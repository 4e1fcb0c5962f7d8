"""The agent loop: model turns and tool calls until the model answers without calling a tool.

Each turn's events go through the run's recorder in the order the model produced them. A turn that streams
anything (text or reasoning) announces a message with ``message_started`` and writes it to the thread with
its ``text_complete`` event (same transaction), under the announced id: with the turn's text, which is empty
for a turn that only reasoned and called tools (the tools it called are named in ``metadata.toolCalls``),
so every ``messageId`` a client sees in a run's events can be read once the run has ended. A run that ends
mid-turn has its message written by its end (``threadline.runs.unfinished``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from threadline.agent.models import (
    ChatMessage,
    Model,
    ModelError,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallReady,
    Usage,
)
from threadline.agent.recorder import Effect, Recorder
from threadline.agent.tools import ToolContext, Tools
from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.kit.metadata import MAX_VALUE_CHARS
from threadline.messages.service import append_message

MAX_TURNS = 10
DEFAULT_INSTRUCTIONS = (
    "You are Threadline's assistant. Answer the user's last message. You can search the organization's "
    "messages, read its recent logs, and save documents for the user as artifacts."
)


async def run_agent(model: Model, tools: Tools, context: ToolContext, history: Sequence[ChatMessage]) -> None:
    """Raises ``ModelError`` when a turn fails or the model never stops calling tools."""
    recorder = context.recorder
    messages = list(history)
    for _ in range(MAX_TURNS):
        content, calls = await _turn(model, tools, recorder, messages)
        messages.append(ChatMessage("assistant", content or None, tool_calls=tuple(calls)))
        if not calls:
            return
        for call in calls:
            await recorder.emit(
                "tool_call_start",
                {"toolCallId": call.id, "name": call.name, "arguments": _arguments(call.arguments)},
            )
            result = await tools.call(context, call)
            await recorder.emit(
                "tool_call_complete",
                {
                    "toolCallId": call.id,
                    "name": call.name,
                    "result": result.value,
                    "isError": result.is_error,
                },
            )
            messages.append(ChatMessage("tool", json.dumps(result.value), tool_call_id=call.id))
    raise ModelError("MAX_TURNS", f"The model called tools for {MAX_TURNS} turns without answering.")


async def _turn(
    model: Model, tools: Tools, recorder: Recorder, messages: Sequence[ChatMessage]
) -> tuple[str, list[ToolCall]]:
    """One model turn: its text and reasoning streamed as events, its message written, its tool calls."""
    message_id = new_id("msg")
    started = False
    text: list[str] = []
    calls: list[ToolCall] = []
    async with contextlib.aclosing(model.stream(messages, tools.specs)) as deltas:
        async for delta in deltas:
            if isinstance(delta, ToolCallReady):
                calls.append(delta.call)
                continue
            if isinstance(delta, Usage):
                recorder.add_usage(delta)
                continue
            if not started:
                started = True
                await recorder.emit("message_started", {"messageId": message_id, "role": "assistant"})
            if isinstance(delta, TextDelta):
                text.append(delta.text)
                await recorder.emit("text_chunk", {"messageId": message_id, "delta": delta.text})
            elif isinstance(delta, ReasoningDelta):
                await recorder.emit("reasoning_chunk", {"messageId": message_id, "delta": delta.text})
    content = "".join(text)
    if started:
        write = _write_message(
            recorder.organization_id,
            recorder.thread_id,
            recorder.run_id,
            message_id,
            content,
            _tool_calls_metadata(calls),
        )
        await recorder.emit("text_complete", {"messageId": message_id, "text": content}, effect=write)
    return content, calls


def _tool_calls_metadata(calls: Sequence[ToolCall]) -> dict[str, str]:
    """``{"toolCalls": "search_messages,query_logs"}``: the names of the tools the turn called, in order,
    cut to whole names within a metadata value's limit (their ids and arguments are in the events)."""
    names = ""
    for call in calls:
        joined = f"{names},{call.name}" if names else call.name
        if len(joined) > MAX_VALUE_CHARS:
            break
        names = joined
    return {"toolCalls": names} if names else {}


def _arguments(raw: str) -> Any:
    """The arguments as an object when they parse (what clients want to show), else as the model sent them."""
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw


def _write_message(
    organization_id: str,
    thread_id: str,
    run_id: str,
    message_id: str,
    content: str,
    metadata: dict[str, str],
) -> Effect:
    async def write(conn: Conn) -> None:
        await append_message(
            conn,
            organization_id,
            thread_id,
            role="assistant",
            content=content,
            metadata=metadata,
            run_id=run_id,
            message_id=message_id,
        )

    return write
