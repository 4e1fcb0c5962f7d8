"""A run's agent stopped to wait for its caller, as data: the conversation so far, the turn's calls with
what became of each, and the turns used. The run keeps it (as JSON) while it waits, so no task, lease or
process holds a waiting run, and whichever executor claims it after the answer continues from here.

Each call of the turn is answered one of three ways (``agent.tools.Kind``): ``execute`` (the server runs
it), ``approval`` (it runs once approved; a rejection answers it with ``{"error": "rejected", ...}``) or
``output`` (the caller's code runs it and submits the result). The caller is asked for the approvals of a
turn first, then for its function outputs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from threadline.agent.models import ChatMessage, ToolCall
from threadline.agent.tools import Kind

ActionType = Literal["submit_tool_outputs", "approve_tool_calls"]


@dataclass(slots=True)
class PendingCall:
    id: str
    name: str
    arguments: str
    kind: Kind
    approved: bool | None = None  # an ``approval`` call's decision, None until given
    done: bool = False  # its ``tool_call_complete`` was recorded, with ``result``
    result: Any = None
    is_error: bool = False

    @property
    def call(self) -> ToolCall:
        return ToolCall(self.id, self.name, self.arguments)

    def complete(self, result: Any, is_error: bool) -> None:
        self.result, self.is_error, self.done = result, is_error, True


@dataclass(slots=True)
class Suspension:
    messages: list[ChatMessage]
    calls: list[PendingCall]
    turns: int

    def waiting_for(self) -> tuple[ActionType, list[PendingCall]] | None:
        """What the caller must answer now (approvals before outputs), or None when nothing is pending."""
        approvals = [c for c in self.calls if c.kind == "approval" and c.approved is None]
        if approvals:
            return "approve_tool_calls", approvals
        outputs = [c for c in self.calls if c.kind == "output" and not c.done]
        if outputs:
            return "submit_tool_outputs", outputs
        return None

    def unanswered(self) -> list[PendingCall]:
        return [c for c in self.calls if not c.done]

    def encode(self) -> str:
        return json.dumps(
            {
                "messages": [_message(m) for m in self.messages],
                "calls": [asdict(c) for c in self.calls],
                "turns": self.turns,
            }
        )

    @classmethod
    def decode(cls, text: str) -> Suspension:
        raw = json.loads(text)
        messages = [
            ChatMessage(
                m["role"],
                m["content"],
                tool_calls=tuple(ToolCall(*c) for c in m["toolCalls"]),
                tool_call_id=m["toolCallId"],
            )
            for m in raw["messages"]
        ]
        return cls(messages, [PendingCall(**c) for c in raw["calls"]], int(raw["turns"]))


def _message(message: ChatMessage) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": message.content,
        "toolCalls": [[c.id, c.name, c.arguments] for c in message.tool_calls],
        "toolCallId": message.tool_call_id,
    }


def parsed_arguments(raw: str) -> Any:
    """The arguments as an object when they parse (what clients want to show), else as the model sent them."""
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw


def rejected(reason: str | None) -> dict[str, Any]:
    return {"error": "rejected", "reason": reason}
