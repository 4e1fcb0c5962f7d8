"""Typed stream events. Every run event carries ``type``, ``cursor`` (its position: pass it back as
``cursor=`` to resume strictly after it), ``run_id``, ``thread_id`` and ``created_at``; a log stream's
events are ``log_record``s. A type this client does not know (the server may add some, as the spec
allows) comes through as ``UnknownEvent`` with every field it had, so callers can skip it or read it."""

from __future__ import annotations

from typing import Any, Literal

from threadline_client._models import LogRecord, RequiredAction, RunUsage, ThreadlineModel


class RunEventBase(ThreadlineModel):
    type: str
    cursor: str
    run_id: str
    thread_id: str
    created_at: str


class RunStarted(RunEventBase):
    type: Literal["run_started"]
    model: str


class MessageStarted(RunEventBase):
    type: Literal["message_started"]
    message_id: str
    role: str


class TextChunk(RunEventBase):
    type: Literal["text_chunk"]
    message_id: str
    delta: str


class ReasoningChunk(RunEventBase):
    type: Literal["reasoning_chunk"]
    message_id: str
    delta: str


class TextComplete(RunEventBase):
    type: Literal["text_complete"]
    message_id: str
    text: str


class ToolCallStart(RunEventBase):
    type: Literal["tool_call_start"]
    tool_call_id: str
    name: str
    arguments: Any


class ToolCallComplete(RunEventBase):
    type: Literal["tool_call_complete"]
    tool_call_id: str
    name: str
    result: Any
    is_error: bool


class ArtifactEvent(RunEventBase):
    type: Literal["artifact"]
    artifact_id: str
    name: str
    mime_type: str
    content: str


class ErrorEvent(RunEventBase):
    type: Literal["error"]
    code: str
    message: str


class RunRequiresAction(RunEventBase):
    """The run waits for its caller (``required_action``); the stream stays open and goes on once the
    action is answered."""

    type: Literal["run_requires_action"]
    required_action: RequiredAction


class RunCompleted(RunEventBase):
    """The run's last event; ``[DONE]`` follows."""

    type: Literal["run_completed"]
    status: str
    usage: RunUsage


class LogRecordEvent(LogRecord):
    type: Literal["log_record"]
    cursor: str


class UnknownEvent(ThreadlineModel):
    """An event of a type this client does not know, every field kept (``to_dict()``)."""

    type: str
    cursor: str | None = None


RunEvent = (
    RunStarted
    | MessageStarted
    | TextChunk
    | ReasoningChunk
    | TextComplete
    | ToolCallStart
    | ToolCallComplete
    | ArtifactEvent
    | ErrorEvent
    | RunRequiresAction
    | RunCompleted
    | UnknownEvent
)
LogEvent = LogRecordEvent | UnknownEvent

_RUN_EVENTS: dict[str, type[RunEventBase]] = {
    "run_started": RunStarted,
    "message_started": MessageStarted,
    "text_chunk": TextChunk,
    "reasoning_chunk": ReasoningChunk,
    "text_complete": TextComplete,
    "tool_call_start": ToolCallStart,
    "tool_call_complete": ToolCallComplete,
    "artifact": ArtifactEvent,
    "error": ErrorEvent,
    "run_requires_action": RunRequiresAction,
    "run_completed": RunCompleted,
}


def run_event(data: Any) -> RunEvent:
    known = _RUN_EVENTS.get(data.get("type"))
    if known is None:
        return UnknownEvent.model_validate(data)
    event: RunEvent = known.model_validate(data)  # type: ignore[assignment]
    return event


def log_event(data: Any) -> LogEvent:
    if data.get("type") == "log_record":
        return LogRecordEvent.model_validate(data)
    return UnknownEvent.model_validate(data)
