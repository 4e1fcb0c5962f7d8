"""What the agent loop needs from a model, whichever provider serves it.

A provider streams one model turn as ``Delta`` values: text and reasoning as they arrive, each tool call once
it is complete (providers that stream a call's arguments in pieces assemble them first: the loop runs a tool
only with its whole arguments), and the turn's token usage. A provider that fails raises ``ModelError`` with
a stable code; the run then ends ``failed`` with an ``error`` event carrying that code.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as models produce it (it may not parse: the tool then reports the error)


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # on role "tool": the call this message answers


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    call: ToolCall


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


Delta = TextDelta | ReasoningDelta | ToolCallReady | Usage


@dataclass(slots=True)  # not frozen: raising sets __traceback__, and context managers set it again
class ModelError(Exception):
    """A turn that could not complete. ``code`` is stable (clients branch on it); ``message`` is for humans
    and never holds credentials."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class Model(Protocol):
    name: str  # "provider/model", as stored on the run

    def stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> AsyncGenerator[Delta]:
        """One turn: the deltas of the model's answer to ``messages``, ending after its usage. A generator,
        so a run that stops early closes it (and the provider's HTTP response) at once."""
        ...
