"""A local OpenAI-compatible server that speaks the real streaming wire format, scripted by the test.

Each ``POST /v1/chat/completions`` takes the next behaviour of the script, in order::

    async with openai_server([text_reply("Hello"), HttpError(429, "slow down")]) as server:
        model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="sk-test", timeout_seconds=5)
        ...
        assert server.requests[0].body["model"] == "gpt-test"

A behaviour is one of:

* a list of chunk dicts (``chunk``, ``tool_call`` and ``usage_chunk`` build them; ``text_reply`` and
  ``tool_calls_reply`` build whole turns): sent as ``data: {json}`` events, then ``data: [DONE]``;
* ``HttpError(status, message)``: that status with OpenAI's error body;
* ``Stall(chunks)``: those chunks, then silence until the client hangs up (or ``seconds`` pass);
* ``Raw(body)``: bytes sent verbatim as a 200 event stream (``MALFORMED``: an event that is not JSON).

A request beyond the script gets HTTP 500 "no scripted response left", so a surplus model turn fails loudly
rather than hanging. The server is uvicorn in a thread of its own: it keeps answering while the test blocks
its event loop (a synchronous client, waiting on a subprocess), and a process under test can reach it too.
"""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send

from tests.support import tcp_listener
from threadline.agent.models import ToolCall

__all__ = [
    "MALFORMED",
    "Behaviour",
    "Chunk",
    "HttpError",
    "OpenAIServer",
    "Raw",
    "RecordedRequest",
    "Stall",
    "chunk",
    "openai_server",
    "text_reply",
    "tool_call",
    "tool_calls_reply",
    "usage_chunk",
]

Chunk = dict[str, Any]

MODEL = "gpt-test"
_COMPLETION_ID = "chatcmpl-test"
_CREATED = 1_700_000_000


@dataclass(frozen=True)
class HttpError:
    status: int
    message: str = "scripted error"
    type: str = "invalid_request_error"
    code: str | None = None


@dataclass(frozen=True)
class Stall:
    chunks: Sequence[Chunk] = ()
    seconds: float = 30.0  # a bound for a client that never hangs up; keep it above the client's timeout


@dataclass(frozen=True)
class Raw:
    body: bytes


MALFORMED = Raw(b"data: {not json\n\n")

Behaviour = Sequence[Chunk] | HttpError | Stall | Raw


@dataclass(frozen=True)
class RecordedRequest:
    body: dict[str, Any]
    headers: dict[str, str]  # names lower-cased


def chunk(delta: Mapping[str, Any] | None = None, *, finish_reason: str | None = None) -> Chunk:
    """One ``chat.completion.chunk`` of choice 0, as OpenAI sends it when usage was requested."""
    return {
        "id": _COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": MODEL,
        "system_fingerprint": "fp_test",
        "choices": [
            {"index": 0, "delta": dict(delta or {}), "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": None,
    }


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> Chunk:
    """The last chunk of a turn when ``stream_options.include_usage`` is set: no choices, only usage."""
    return {
        **chunk(),
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def tool_call(index: int, *, id: str | None = None, name: str | None = None, arguments: str = "") -> Chunk:
    """One piece of a streamed tool call, for a delta's ``tool_calls`` list. Like OpenAI, give the first
    piece of a call its ``id`` and ``name`` and the later pieces only more ``arguments``."""
    function: dict[str, str] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    piece: Chunk = {"index": index, "function": function}
    if id is not None:
        piece.update(id=id, type="function")
    return piece


def text_reply(
    *pieces: str, reasoning: Sequence[str] = (), prompt_tokens: int = 12, completion_tokens: int = 4
) -> list[Chunk]:
    """A whole turn answering with text (after ``reasoning`` as vLLM/DeepSeek stream it, if given)."""
    return [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        *(chunk({"reasoning_content": text}) for text in reasoning),
        *(chunk({"content": text}) for text in pieces),
        chunk(finish_reason="stop"),
        usage_chunk(prompt_tokens, completion_tokens),
    ]


def tool_calls_reply(*calls: ToolCall, prompt_tokens: int = 20, completion_tokens: int = 8) -> list[Chunk]:
    """A whole turn calling tools, each call's arguments streamed in two pieces split mid-JSON."""
    chunks = [chunk({"role": "assistant", "content": None, "refusal": None})]
    for index, call in enumerate(calls):
        half = len(call.arguments) // 2
        chunks.append(chunk({"tool_calls": [tool_call(index, id=call.id, name=call.name)]}))
        for part in (call.arguments[:half], call.arguments[half:]):
            if part:
                chunks.append(chunk({"tool_calls": [tool_call(index, arguments=part)]}))
    return [*chunks, chunk(finish_reason="tool_calls"), usage_chunk(prompt_tokens, completion_tokens)]


class OpenAIServer:
    """``base_url`` (ends in ``/v1``) and ``requests`` (each chat-completions call, in order) are for tests;
    the rest runs in the server's thread."""

    def __init__(self, script: Iterable[Behaviour]) -> None:
        self.requests: list[RecordedRequest] = []
        self._script = collections.deque(script)
        self._socket = tcp_listener()  # TCP_NODELAY: each reply stalled ~40 ms without it
        self._socket.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = asyncio.Event()  # bound to the server's loop when first awaited, there
        self._uvicorn = _Uvicorn(
            uvicorn.Config(
                self, lifespan="off", log_config=None, access_log=False, timeout_graceful_shutdown=2
            ),
            ready=self._ready,
            stopping=self._stopping,
        )
        self._thread = threading.Thread(target=self._run, name=f"openai-server {self.base_url}", daemon=True)

    @property
    def unused(self) -> int:
        """Behaviours no request has taken yet (a test can assert its script was played to the end)."""
        return len(self._script)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        if (scope["method"], scope["path"]) != ("POST", "/v1/chat/completions"):
            await _send_error(send, HttpError(404, f"no route {scope['method']} {scope['path']}"))
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.requests.append(RecordedRequest(json.loads(body), headers))
        behaviour = (
            self._script.popleft()
            if self._script
            else HttpError(500, "no scripted response left", "server_error")
        )
        match behaviour:
            case HttpError():
                await _send_error(send, behaviour)
            case Raw(body=raw):
                await _start_event_stream(send)
                await send({"type": "http.response.body", "body": raw, "more_body": False})
            case Stall(chunks=chunks, seconds=seconds):
                await _start_event_stream(send)
                for data in chunks:
                    await send({"type": "http.response.body", "body": _event(data), "more_body": True})
                await self._stall(receive, seconds)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            case _:
                await _start_event_stream(send)
                for data in behaviour:
                    await send({"type": "http.response.body", "body": _event(data), "more_body": True})
                await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    async def _stall(self, receive: Receive, seconds: float) -> None:
        """Silent until the client hangs up or the server stops, so no test waits out ``seconds``."""
        hung_up = asyncio.ensure_future(_disconnect(receive))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({hung_up, stopping}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hung_up.cancel()
            stopping.cancel()

    def _run(self) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            await self._uvicorn.serve(sockets=[self._socket])

        try:
            asyncio.run(serve())
        except BaseException as exc:  # reported by start(), in the test's thread
            self._failure = exc
        finally:
            self._ready.set()

    def _start(self) -> None:
        self._thread.start()
        if not self._ready.wait(timeout=10) or self._failure is not None or not self._thread.is_alive():
            raise RuntimeError(f"openai_server did not start: {self._failure!r}")

    def _stop(self) -> None:
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(timeout=10)
        self._socket.close()


class _Uvicorn(uvicorn.Server):
    """uvicorn that stops at once: its own main loop polls a flag every 0.1 s and its shutdown pauses
    0.1 s more, which a test suite starting a server per test would pay hundreds of times."""

    def __init__(self, config: uvicorn.Config, *, ready: threading.Event, stopping: asyncio.Event) -> None:
        super().__init__(config)
        self.ready = ready
        self.stopping = stopping

    async def main_loop(self) -> None:
        await self.on_tick(0)  # sets the default headers, as uvicorn's own loop does first
        self.ready.set()
        await self.stopping.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # closes idle connections, and busy ones once their response ends
        if self.server_state.tasks:  # stalls end on ``stopping`` too, so these finish promptly
            await asyncio.wait(list(self.server_state.tasks), timeout=self.config.timeout_graceful_shutdown)


@asynccontextmanager
async def openai_server(script: Iterable[Behaviour] = ()) -> AsyncIterator[OpenAIServer]:
    server = OpenAIServer(script)
    await asyncio.to_thread(server._start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server._stop)


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _start_event_stream(send: Send) -> None:
    headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def _send_error(send: Send, error: HttpError) -> None:
    body = json.dumps(
        {"error": {"message": error.message, "type": error.type, "param": None, "code": error.code}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _event(data: Chunk) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"
