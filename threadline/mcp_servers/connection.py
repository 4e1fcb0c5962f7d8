"""Threadline as an MCP client: one session to one registered server, reused for every call made through it.

Built on the official SDK (``mcp``): its Streamable HTTP and HTTP+SSE transports, given an HTTP client whose
connections go through ``kit.egress.PinnedTransport``, so every request (the session's POSTs, its event
stream, the SSE transport's message endpoint) is checked against the egress rules at the address it connects
to. Opening a session (connect and handshake) and each call are bounded by the server's ``timeoutSeconds``.

A session is an async context a run holds for all its turns; the SDK client inside it lives in a task of
its own (``_Owner``), so a broken connection cannot cancel the caller. Calls never raise for what the server
or the network does: a failure, a timeout or a server-side error is a ``ToolResult`` with ``is_error`` set,
which a run reports as the call's result and goes on.

The SDK is imported where a session opens or a result is read, not at this module's top: importing ``mcp``
was about a fifth of ``import threadline.app`` (2.1 to 2.3 CPU-s with it, 1.7 to 1.8 without, three runs
each at load average ~8, 2026-12-02), paid by every ``threadline serve``, worker and test process, while
only a run that calls an MCP server needs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import httpx2

from threadline.kit.egress import EgressPolicy, pinned_client
from threadline.kit.metrics import MCP_CALLS

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

logger = logging.getLogger(__name__)
# How long an idle event stream may stay silent before the SDK gives it up (not a call's limit).
_STREAM_READ_SECONDS = 300.0


class McpUnreachable(Exception):
    """The server could not be connected to, refused the handshake, or took longer than its timeout. The
    message names no header value."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str | None
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A call's outcome as a run reports it: ``result`` is the structured content when the tool gives one,
    else its text (the blocks joined) when all its content is text, else the content blocks as JSON."""

    result: Any
    is_error: bool


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What connecting needs: a registered server with its header values opened."""

    url: str
    transport: str
    headers: Mapping[str, str]
    timeout_seconds: float


def result_of(call: CallToolResult) -> ToolResult:
    from mcp_types import TextContent

    if call.structured_content is not None:
        return ToolResult(call.structured_content, call.is_error)
    if all(isinstance(block, TextContent) for block in call.content):
        text = "\n".join(block.text for block in call.content if isinstance(block, TextContent))
        return ToolResult(text, call.is_error)
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in call.content]
    return ToolResult(blocks, call.is_error)


def _failure(message: str) -> ToolResult:
    return ToolResult({"error": message}, True)


class McpSession:
    """An open session; see the module docstring."""

    __slots__ = ("_client", "_owner", "_timeout")

    def __init__(self, client: Client, owner: _Owner, timeout_seconds: float) -> None:
        self._client = client
        self._owner = owner
        self._timeout = timeout_seconds

    @property
    def alive(self) -> bool:
        """False once the connection broke: every later call is an error result at once (a caller that
        wants to go on opens another session)."""
        return not self._owner.ended.is_set()

    async def list_tools(self) -> list[ToolInfo]:
        """Every tool the server offers now (all pages). Raises ``McpUnreachable`` on any failure."""
        tools: list[ToolInfo] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self._timeout):
                while True:
                    page = await self._client.list_tools(cursor=cursor, cache_mode="refresh")
                    tools += [ToolInfo(t.name, t.description, dict(t.input_schema)) for t in page.tools]
                    cursor = page.next_cursor
                    if not cursor:
                        return tools
        except Exception as exc:
            raise McpUnreachable(_describe(exc)) from exc

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        if not self.alive:
            MCP_CALLS.labels("failed").inc()
            return _failure(f"The connection to the MCP server was lost: {self._owner.failure()}.")
        try:
            with anyio.fail_after(self._timeout):
                call = await self._client.call_tool(name, dict(arguments), read_timeout_seconds=self._timeout)
        except TimeoutError:
            MCP_CALLS.labels("timeout").inc()
            return _failure(f"The MCP server did not answer within {self._timeout:g} seconds.")
        except Exception as exc:
            MCP_CALLS.labels("failed").inc()
            logger.info("MCP call %s failed: %s", name, _describe(exc))
            return _failure(f"The MCP call failed: {_describe(exc)}")
        result = result_of(call)
        MCP_CALLS.labels("error" if result.is_error else "ok").inc()
        return result


class _Owner:
    """Holds the SDK client open in a task of its own. The SDK's transports run in task groups that cancel
    the task which entered them when the connection breaks; entered here, that is this task, never the
    caller's (a run's executor): the caller sees error results, and closes the session whenever it likes,
    from whichever task."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.ready = asyncio.Event()
        self.ended = asyncio.Event()
        self.stop = asyncio.Event()
        self.error: BaseException | None = None

    async def run(self) -> None:
        try:
            async with self.client:
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:
            self.error = exc
        finally:
            self.ended.set()
            self.ready.set()

    def failure(self) -> str:
        return _describe(self.error) if self.error is not None else "the session ended"


def _describe(exc: BaseException) -> str:
    """A failure in words for the tenant: the exception's kind and message, the first of a group, never a
    header (the SDK's messages name URLs and statuses only)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "the server did not answer in time"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"the server answered HTTP {exc.response.status_code}"
    if isinstance(exc, httpx2.TransportError):
        return f"could not connect ({type(exc).__name__}: {exc})" if str(exc) else "could not connect"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@asynccontextmanager
async def open_session(endpoint: Endpoint, policy: EgressPolicy) -> AsyncIterator[McpSession]:
    """A session to ``endpoint``, handshake done; ``McpUnreachable`` when that fails or takes longer than
    the endpoint's timeout. The caller's body may raise: the session still closes."""
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(endpoint.timeout_seconds, read=_STREAM_READ_SECONDS)
    headers = dict(endpoint.headers)
    if endpoint.transport == "sse":
        transport = sse_client(
            endpoint.url,
            headers=headers,
            timeout=endpoint.timeout_seconds,
            sse_read_timeout=_STREAM_READ_SECONDS,
            httpx_client_factory=partial(pinned_client, policy),
        )
        http = None
    else:
        http = pinned_client(policy, headers=headers, timeout=timeout)
        transport = streamable_http_client(endpoint.url, http_client=http)
    client = Client(transport, cache=None, read_timeout_seconds=endpoint.timeout_seconds)
    owner = _Owner(client)
    task = asyncio.create_task(owner.run(), name=f"mcp-session {endpoint.url}")
    try:
        try:
            await asyncio.wait_for(owner.ready.wait(), endpoint.timeout_seconds)
        except TimeoutError:
            raise McpUnreachable("the server did not complete the handshake in time") from None
        if owner.ended.is_set():
            raise McpUnreachable(owner.failure())
        yield McpSession(client, owner, endpoint.timeout_seconds)
    finally:
        owner.stop.set()
        if not owner.ready.is_set():
            task.cancel()
        await asyncio.wait({task})
        if http is not None:
            await http.aclose()
