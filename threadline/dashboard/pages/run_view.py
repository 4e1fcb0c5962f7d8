"""A run's events as the run view shows them: blocks in a log (a turn of the model with its reasoning and
text, a tool call with its result, an artifact, an error, the end), folded from the persisted events.

One fold serves the page and the live stream. The page folds every event it read into blocks; the stream
folds each batch the run's feed hands it: blocks begun in the batch are sent whole (appended to the log),
and what a batch adds to a block sent earlier (text deltas, a tool's result, the run's end) is sent as an
out-of-band update of that block's element. So every event is shown once, consecutive deltas read as one
text, and each batch costs the browser work in proportion to the batch, never to the log (a run of
10,000 chunks stays cheap). Element ids derive from the events alone (``messageId``, ``toolCallId``),
so a stream resumed by cursor needs no state of the connection before it.

A run waiting for its caller (``run_requires_action``) adds a record to the log and the pending action's
panel (``#run-pending``: Approve and Reject for approvals, "waiting for the customer's code" for function
calls), and marks its calls' results as waiting. The run writes nothing while it waits, so any later event
means the wait is over: a batch that completes a call or ends the run empties the panel."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# What the log shows of a tool's arguments or result, or of an artifact (the whole is in the API and
# the artifact's download).
PREVIEW_CHARS = 20_000


def element_id(prefix: str, raw: object) -> str:
    """An id a CSS selector can name whatever the model called its tool call (hex of the raw id)."""
    return f"{prefix}-{str(raw).encode().hex()}"


def preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    if len(text) > PREVIEW_CHARS:
        return text[:PREVIEW_CHARS] + f"\n… ({len(text) - PREVIEW_CHARS:,} more characters)"
    return text


@dataclass
class Block:
    """One element of the log, begun by the event numbered ``seq``."""

    kind: str  # started | turn | tool | action | artifact | error | completed
    seq: int
    event: dict[str, Any]
    reasoning: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    waiting: str | None = None  # a pending call's: the requiredAction type it waits in

    @property
    def key(self) -> str:
        """The id of what later events of the block update (a turn's text, a tool call's result)."""
        if self.kind == "turn":
            return element_id("m", self.event.get("messageId"))
        if self.kind == "tool":
            return element_id("tc", self.event.get("toolCallId"))
        return f"ev-{self.seq}"


@dataclass
class Update:
    """What events add to a block sent before: deltas appended to ``target``, or its replacement."""

    action: str  # reasoning | text | result | waiting | pending | resumed | completed
    target: str
    parts: list[str] = field(default_factory=list)
    event: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class Fold:
    blocks: list[Block] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    completed: dict[str, Any] | None = None  # the run_completed event, once folded
    last_cursor: str | None = None
    pending: dict[str, Any] | None = None  # the requiredAction still unanswered after the last event


_BLOCK_KINDS = {
    "run_started": "started",
    "message_started": "turn",
    "tool_call_start": "tool",
    "run_requires_action": "action",
    "artifact": "artifact",
    "error": "error",
    "run_completed": "completed",
}


def fold(events: list[dict[str, Any]]) -> Fold:
    """``events`` in order (the API's event JSON, decoded)."""
    done = Fold()
    begun: dict[str, Block] = {}
    answered = False  # a call completed or the run ended: the panel of an earlier wait goes
    for event in events:
        seq = int(str(event["cursor"]).rsplit(".", 1)[1])
        done.last_cursor = event["cursor"]
        type_ = event.get("type")
        kind = _BLOCK_KINDS.get(str(type_))
        done.pending = None
        answered = answered or type_ in ("tool_call_complete", "run_completed")
        if kind == "action":
            done.pending = event.get("requiredAction") or {}
            _wait(done, begun, done.pending)
        if kind is not None:
            block = Block(kind, seq, event)
            done.blocks.append(block)
            begun[block.key] = block
            if kind == "completed":
                done.completed = event
                done.updates.append(Update("completed", "run-status", event=event))
            continue
        if type_ in ("text_chunk", "reasoning_chunk"):
            key = element_id("m", event.get("messageId"))
            delta = str(event.get("delta", ""))
            action = "text" if type_ == "text_chunk" else "reasoning"
            turn = begun.get(key)
            if turn is not None:
                (turn.text if action == "text" else turn.reasoning).append(delta)
            elif done.updates and (done.updates[-1].action, done.updates[-1].target) == (action, key):
                done.updates[-1].parts.append(delta)
            else:
                done.updates.append(Update(action, key, [delta]))
        elif type_ == "tool_call_complete":
            key = element_id("tc", event.get("toolCallId"))
            tool = begun.get(key)
            if tool is not None:
                tool.result = event
            else:
                done.updates.append(Update("result", key, event=event))
        # text_complete repeats the text its chunks showed: nothing to add.
    if done.pending is not None:
        done.updates.append(Update("pending", "run-pending", event=done.pending))
    elif answered:
        done.updates.insert(0, Update("resumed", "run-pending"))
    return done


def _wait(done: Fold, begun: dict[str, Block], action: dict[str, Any]) -> None:
    """Marks the calls of ``action`` as waiting: blocks of this fold directly, earlier ones by update."""
    for call in action.get("toolCalls") or []:
        key = element_id("tc", call.get("id"))
        tool = begun.get(key)
        if tool is not None:
            tool.waiting = str(action.get("type"))
        else:
            done.updates.append(Update("waiting", key, [str(action.get("type"))]))
