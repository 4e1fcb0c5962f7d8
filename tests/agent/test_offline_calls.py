"""``offline/scripted``'s ``#call=NAME {json}`` lines: every call in one turn, then an answer quoting each
result as compact JSON."""

from __future__ import annotations

import json

from threadline.agent.models import ChatMessage, Delta, TextDelta, ToolCall, ToolCallReady
from threadline.agent.offline import ScriptedModel


async def turn(messages: list[ChatMessage]) -> list[Delta]:
    return [delta async for delta in ScriptedModel().stream(messages, [])]


async def test_each_line_is_a_call_of_one_turn_then_the_results_are_quoted() -> None:
    prompt = 'Please:\n#call=lookup_order {"id": 7}\n  #call=refund\n#call=bad-args [1, 2]\nthanks'
    first = await turn([ChatMessage("user", prompt)])
    calls = [d.call for d in first if isinstance(d, ToolCallReady)]
    assert calls == [
        ToolCall("call_1", "lookup_order", '{"id": 7}'),
        ToolCall("call_2", "refund", "{}"),
        ToolCall("call_3", "bad-args", "[1, 2]"),  # sent as written: the tool (or caller) reports it
    ]
    assert not any(isinstance(d, TextDelta) for d in first)

    results = [{"status": "shipped", "items": [1, 2]}, "done", {"error": "rejected", "reason": None}]
    history = [
        ChatMessage("user", prompt),
        ChatMessage("assistant", None, tool_calls=tuple(calls)),
        *(ChatMessage("tool", json.dumps(r), tool_call_id=c.id) for c, r in zip(calls, results, strict=True)),
    ]
    answer = "".join(d.text for d in await turn(history) if isinstance(d, TextDelta))
    assert answer == (
        'lookup_order returned {"status":"shipped","items":[1,2]}; refund returned "done"; '
        'bad-args returned {"error":"rejected","reason":null}.'
    )


async def test_without_call_lines_the_script_is_unchanged() -> None:
    deltas = await turn([ChatMessage("user", "#notools hello #call=x is not at a line's start")])
    assert not any(isinstance(d, ToolCallReady) for d in deltas)
