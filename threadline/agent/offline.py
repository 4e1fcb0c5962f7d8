"""``offline/scripted``: a deterministic model that needs no network (the default).

It reasons about the thread and answers, and on the way exercises every event type, so an installation
can be tried, and its clients tested, without a model provider. Its script, per run:

1. Reasoning (``reasoning_chunk``), then two tool calls: ``search_messages`` with the longest word of the
   last user message, and ``query_logs`` for errors of the last hour.
2. Reasoning about what the tools found, then ``create_artifact``: ``summary.md`` (an ``artifact`` event).
3. The answer, streamed word by word (``text_chunk``, then ``text_complete``): what it found, and the
   request quoted back.

Directives in the last user message change the script (they are documented for users in
docs/behaviour.md, "Models and tools"):

- ``#notools``: skip steps 1 and 2 (one reasoning chunk, then the answer).
- ``#chunks=N``: the answer is N words (1 to 100,000), one ``text_chunk`` each.
- ``#delay=MS``: wait MS milliseconds (up to 60,000) before each delta: a slow model, to watch or cancel.
- ``#fail``: after the first reasoning chunk the model fails: the run ends ``failed`` with an ``error``
  event of code ``MODEL_ERROR``.
- ``#call=NAME {json object}``, one line per call: instead of its usual tools, the model calls each NAME
  (offered or not) with those arguments, all in one turn (ids ``call_1``, ``call_2``…); then it answers
  quoting each result as compact JSON.

With a ``json_schema`` response format, every answer (after the tools, as above) is instead one JSON
document generated from the schema (``agent.schema_instance``): deterministic, its free-form strings quoting
the request (without its directives), streamed in pieces that join to the document.

Token usage counts words: input = the words of every message sent, output = the deltas produced.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

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
from threadline.agent.schema_instance import instance_of

NAME = "offline/scripted"
_WORD = re.compile(r"[A-Za-z0-9_]+")
_CHUNKS = re.compile(r"#chunks=(\d+)")
_DELAY = re.compile(r"#delay=(\d+)")
_CALL = re.compile(r"^\s*#call=([A-Za-z0-9_-]{1,64})[ \t]*(.*?)\s*$", re.MULTILINE)
_DIRECTIVE = re.compile(r"#\S+")  # left out of the request a document quotes
MAX_CHUNKS = 100_000
MAX_DELAY_MS = 60_000


@dataclass(frozen=True, slots=True)
class _Directives:
    tools: bool
    chunks: int | None
    delay: float
    fail: bool

    @classmethod
    def of(cls, prompt: str) -> _Directives:
        chunks = _CHUNKS.search(prompt)
        delay = _DELAY.search(prompt)
        return cls(
            tools="#notools" not in prompt,
            chunks=min(max(int(chunks[1]), 1), MAX_CHUNKS) if chunks else None,
            delay=min(int(delay[1]), MAX_DELAY_MS) / 1000 if delay else 0.0,
            fail="#fail" in prompt,
        )


def _words(text: str | None) -> int:
    return len((text or "").split())


class ScriptedModel:
    name = NAME

    def __init__(self, response_format: JsonSchemaFormat | None = None) -> None:
        self._response_format = response_format

    def _structured(self, prompt: str) -> list[str] | None:
        """The answer as the format's document, in pieces; None without a format."""
        if self._response_format is None:
            return None
        document = instance_of(self._response_format.schema_, _DIRECTIVE.sub("", prompt))
        return _split(json.dumps(document, ensure_ascii=False))

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[Delta]:
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        prompt = messages[last_user].content or "" if last_user >= 0 else ""
        directives = _Directives.of(prompt)
        since_prompt = messages[last_user + 1 :]
        results = {m.tool_call_id: m.content or "" for m in since_prompt if m.role == "tool"}
        calls = [call for m in since_prompt for call in m.tool_calls]
        available = {spec.name for spec in tools}
        produced = 0

        async def pace() -> None:
            if directives.delay:
                await asyncio.sleep(directives.delay)

        requested = _requested_calls(prompt)
        if requested:
            if not calls:
                for call in requested:
                    yield ToolCallReady(call)
                yield Usage(sum(_words(m.content) + 1 for m in messages), len(requested))
                return
            for text in self._structured(prompt) or _split(_quoted_results(calls, results)):
                await pace()
                produced += 1
                yield TextDelta(text)
            yield Usage(sum(_words(m.content) + 1 for m in messages), produced)
            return
        if not directives.tools or not available >= {"search_messages", "query_logs", "create_artifact"}:
            step = "answer"
        elif not calls:
            step = "investigate"
        elif not any(call.name == "create_artifact" for call in calls):
            step = "summarise"
        else:
            step = "answer"
        found = _findings(calls, results)

        if step == "investigate":
            for text in _split(
                f"The user wrote {_words(prompt)} words. I will look for related messages and for recent "
                "error logs before answering."
            ):
                await pace()
                produced += 1
                yield ReasoningDelta(text)
                if directives.fail:
                    yield Usage(sum(_words(m.content) + 1 for m in messages), produced)
                    raise ModelError("MODEL_ERROR", "The scripted model was asked to fail (#fail).")
            keyword = max(_WORD.findall(prompt), key=len, default="help")
            yield ToolCallReady(ToolCall("call_search", "search_messages", json.dumps({"query": keyword})))
            yield ToolCallReady(
                ToolCall("call_logs", "query_logs", json.dumps({"level": "error", "limit": 5}))
            )
            produced += 2
        elif step == "summarise":
            await pace()
            yield ReasoningDelta(f"Found {found[0]} related messages and {found[1]} error logs. ")
            summary = (
                f"# Summary\n\n- Request: {prompt[:200]}\n- Related messages: {found[0]}\n"
                f"- Error logs in the last hour: {found[1]}\n"
            )
            arguments = {"name": "summary.md", "mimeType": "text/markdown", "content": summary}
            yield ToolCallReady(ToolCall("call_artifact", "create_artifact", json.dumps(arguments)))
            produced += 2
        else:
            await pace()
            yield ReasoningDelta("Answering the request. ")
            produced += 1
            if directives.fail:
                yield Usage(sum(_words(m.content) + 1 for m in messages), produced)
                raise ModelError("MODEL_ERROR", "The scripted model was asked to fail (#fail).")
            for text in self._structured(prompt) or _answer(prompt, found, directives.chunks, bool(calls)):
                await pace()
                produced += 1
                yield TextDelta(text)
        yield Usage(sum(_words(m.content) + 1 for m in messages), produced)


def _requested_calls(prompt: str) -> list[ToolCall]:
    """The ``#call=`` lines, in order; arguments that are not a JSON object are sent as written (the tool,
    or the caller, reports them)."""
    found = []
    for index, match in enumerate(_CALL.finditer(prompt), start=1):
        arguments = match[2] or "{}"
        found.append(ToolCall(f"call_{index}", match[1], arguments))
    return found


def _quoted_results(calls: Sequence[ToolCall], results: dict[str | None, str]) -> str:
    quoted = []
    for call in calls:
        raw = results.get(call.id, "null")
        try:
            compact = json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)
        except ValueError:
            compact = raw
        quoted.append(f"{call.name} returned {compact}")
    return "; ".join(quoted) + "."


def _split(text: str) -> list[str]:
    words = text.split(" ")
    return [word + " " for word in words[:-1]] + [words[-1]]


def _findings(calls: Sequence[ToolCall], results: dict[str | None, str]) -> tuple[int, int]:
    messages = logs = 0
    for call in calls:
        try:
            result = json.loads(results.get(call.id, "null"))
        except ValueError:
            continue
        if not isinstance(result, dict):
            continue
        if call.name == "search_messages":
            messages = int(result.get("totalResults", 0))
        elif call.name == "query_logs":
            logs = len(result.get("records", []))
    return messages, logs


def _answer(prompt: str, found: tuple[int, int], chunks: int | None, used_tools: bool) -> list[str]:
    if chunks is not None:
        return [f"word{i} " if i < chunks else f"word{i}." for i in range(1, chunks + 1)]
    quoted = " ".join(prompt.split()[:40])
    if used_tools:
        text = (
            f"I found {found[0]} related messages and {found[1]} recent error logs, and saved a summary "
            f'as summary.md. You asked: "{quoted}"'
        )
    else:
        text = f'You asked: "{quoted}"'
    return _split(text)


def scripted_model(model: str, response_format: JsonSchemaFormat | None = None) -> ScriptedModel:
    if model != "scripted":
        raise ValueError(f"unknown offline model {model!r}; the offline provider has offline/scripted")
    return ScriptedModel(response_format)
