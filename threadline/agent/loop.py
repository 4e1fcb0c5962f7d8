"""The agent loop: model turns and tool calls until the model answers without calling a tool.

Each turn's events go through the run's recorder in the order the model produced them. A turn that streams
anything (text or reasoning) announces a message with ``message_started`` and writes it to the thread with
its ``text_complete`` event (same transaction), under the announced id: with the turn's text, which is empty
for a turn that only reasoned and called tools (the tools it called are named in ``metadata.toolCalls``),
so every ``messageId`` a client sees in a run's events can be read once the run has ended. A run that ends
mid-turn has its message written by its end (``threadline.runs.unfinished``).

With a ``json_schema`` response format, the answer (the turn that calls no tool) must be one JSON document
valid against the schema, or the run fails ``OUTPUT_INVALID`` with the reason. Its message is written all
the same (its text was streamed; messages are never changed after they are written), marked
``metadata.outputInvalid``, so the thread shows what the model said; every answer given a format carries
``metadata.responseFormat``, the format's name.

A turn whose calls need the caller (an approval, a function tool's output) ends the loop with a
``Suspension`` (agent.suspension) once the calls the server may run have run: the run waits, holding
nothing, and the loop is entered again with it (``resume``) after the caller answered.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from datetime import datetime
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
from threadline.agent.response_format import JsonSchemaFormat, answer_problem
from threadline.agent.suspension import PendingCall, Suspension, parsed_arguments
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


async def run_agent(
    model: Model,
    tools: Tools,
    context: ToolContext,
    history: Sequence[ChatMessage],
    resume: Suspension | None = None,
    *,
    response_format: JsonSchemaFormat | None = None,
) -> Suspension | None:
    """Runs the model to its answer (None), or to a turn that waits for the caller (its ``Suspension``).
    Raises ``ModelError`` when a turn fails, the model never stops calling tools, or its answer is not
    the ``response_format`` asked for (``OUTPUT_INVALID``)."""
    recorder = context.recorder
    messages = list(resume.messages) if resume is not None else list(history)
    turns = resume.turns if resume is not None else 0
    pending = resume.calls if resume is not None else None
    while True:
        if pending is not None:
            if await _settle(tools, context, pending):
                return Suspension(messages, pending, turns)
            messages += [ChatMessage("tool", json.dumps(c.result), tool_call_id=c.id) for c in pending]
        if turns >= MAX_TURNS:
            raise ModelError("MAX_TURNS", f"The model called tools for {MAX_TURNS} turns without answering.")
        content, calls, problem = await _turn(model, tools, recorder, messages, response_format)
        turns += 1
        messages.append(ChatMessage("assistant", content or None, tool_calls=tuple(calls)))
        if problem is not None:
            raise ModelError("OUTPUT_INVALID", problem)
        if not calls:
            return None
        pending = [PendingCall(c.id, c.name, c.arguments, tools.kind(c)) for c in calls]
        # A turn the server answers alone shows each call's start then its end; one that waits for the
        # caller shows every start first, then ``run_requires_action``, then the ends.
        alone = all(c.kind == "execute" for c in pending)
        for call in pending:
            await recorder.emit(
                "tool_call_start",
                {"toolCallId": call.id, "name": call.name, "arguments": parsed_arguments(call.arguments)},
            )
            if alone:
                result = await tools.call(context, call.call)
                await _complete(context, call, result.value, result.is_error)


async def _settle(tools: Tools, context: ToolContext, pending: list[PendingCall]) -> bool:
    """Runs what the server may run of a turn's calls (and completes the rejected ones); whether the turn
    still waits for the caller. Approvals are asked before function outputs."""
    for call in pending:
        if call.done:
            continue
        if call.kind == "execute" or (call.kind == "approval" and call.approved):
            result = await tools.call(context, call.call)
            await _complete(context, call, result.value, result.is_error)
    return Suspension([], pending, 0).waiting_for() is not None


async def _complete(context: ToolContext, call: PendingCall, result: Any, is_error: bool) -> None:
    call.complete(result, is_error)
    await context.recorder.emit(
        "tool_call_complete",
        {"toolCallId": call.id, "name": call.name, "result": result, "isError": is_error},
    )


async def _turn(
    model: Model,
    tools: Tools,
    recorder: Recorder,
    messages: Sequence[ChatMessage],
    response_format: JsonSchemaFormat | None,
) -> tuple[str, list[ToolCall], str | None]:
    """One model turn: its text and reasoning streamed as events, its message written, its tool calls,
    and, when it is the answer, why it is not the format asked for (None: it is, or none was asked)."""
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
    metadata = _tool_calls_metadata(calls)
    problem = None
    if response_format is not None and not calls:
        problem = answer_problem(response_format, content)
        metadata["responseFormat"] = response_format.name
        if problem is not None:
            metadata["outputInvalid"] = "true"
    if started:
        write = _write_message(
            recorder.organization_id,
            recorder.thread_id,
            recorder.run_id,
            message_id,
            content,
            metadata,
        )
        await recorder.emit("text_complete", {"messageId": message_id, "text": content}, effect=write)
    return content, calls, problem


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


def _write_message(
    organization_id: str,
    thread_id: str,
    run_id: str,
    message_id: str,
    content: str,
    metadata: dict[str, str],
) -> Effect:
    async def write(conn: Conn, now: datetime) -> None:
        await append_message(
            conn,
            organization_id,
            thread_id,
            role="assistant",
            content=content,
            metadata=metadata,
            run_id=run_id,
            message_id=message_id,
            now=now,
        )

    return write
