"""Sessions to registered servers, as a run will use them: one session for many calls, every failure an
error result rather than an exception, against the Python SDK's server and the MCP project's reference
server (``@modelcontextprotocol/server-everything``, Streamable HTTP and HTTP+SSE)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager

import httpx
import pytest

from tests.mcp_servers.helpers import register, tools_of
from tests.mcp_servers.peers import PythonPeer, everything_peer, python_peer
from tests.support import Tenant
from threadline.kit.errors import BadGateway
from threadline.kit.metrics import REGISTRY
from threadline.mcp_servers import service
from threadline.mcp_servers.connection import McpSession
from threadline.runtime import Services


def _calls() -> dict[str, float]:
    """``threadline_mcp_calls_total`` by result, as /metrics would show it."""
    return {
        r: (REGISTRY.get_sample_value("threadline_mcp_calls_total", {"result": r}) or 0.0)
        for r in ("ok", "error", "timeout", "failed")
    }


def _session(services: Services, tenant: Tenant, server_id: str) -> AbstractAsyncContextManager[McpSession]:
    return service.session(
        services.db, tenant.org_id, server_id, box=services.secret_box, policy=services.egress
    )


@pytest.mark.parametrize(("transport", "path"), [("streamable_http", "/mcp"), ("sse", "/sse")])
async def test_one_session_many_calls(
    client: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    peer: PythonPeer,
    transport: str,
    path: str,
) -> None:
    created = await register(
        client, tenant, url=peer.base + path, transport=transport, headers={"X-Api-Key": "k-42"}
    )
    peer.seen_headers.clear()
    peer.seen_ports.clear()
    before = _calls()
    async with _session(services, tenant, created["id"]) as opened:
        echoed = await opened.call_tool("echo", {"text": "hello"})
        added = await opened.call_tool("add", {"a": 2, "b": 40})
        failed = await opened.call_tool("explode", {})
        unknown = await opened.call_tool("no_such_tool", {})
        again = await opened.call_tool("echo", {"text": "still here"})
    assert (echoed.result, echoed.is_error) == ({"result": "hello"}, False)
    assert (added.result, added.is_error) == ({"sum": 42}, False)
    assert failed.is_error and "explode" in str(failed.result)
    assert unknown.is_error and "no_such_tool" in str(unknown.result)
    assert (again.result, again.is_error) == ({"result": "still here"}, False)
    counted = {result: _calls()[result] - before[result] for result in before}
    assert counted["ok"] == 3 and counted["error"] + counted["failed"] == 2 and counted["timeout"] == 0
    assert all(h.get("x-api-key") == "k-42" for h in peer.seen_headers)
    # One session: five calls and the handshake over one kept-alive connection (HTTP+SSE: its event
    # stream's and one for the messages), never a connection per call.
    assert len(peer.seen_headers) >= 6
    assert len(set(peer.seen_ports)) == (1 if transport == "streamable_http" else 2)


async def test_a_call_past_its_timeout_is_an_error_result(
    client: httpx.AsyncClient, services: Services, tenant: Tenant, peer: PythonPeer
) -> None:
    created = await register(client, tenant, url=peer.base + "/mcp", timeoutSeconds=0.5)
    before = _calls()["timeout"]
    async with _session(services, tenant, created["id"]) as opened:
        started = time.monotonic()
        late = await opened.call_tool("slow", {"seconds": 30})
        assert time.monotonic() - started < 5
        assert late.is_error and "0.5 seconds" in late.result["error"]
    assert _calls()["timeout"] - before == 1  # threadline_mcp_calls_total{result="timeout"}


async def test_a_server_that_dies_mid_session(
    client: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    with python_peer() as doomed:
        created = await register(client, tenant, url=doomed.base + "/mcp", timeoutSeconds=2)
        async with _session(services, tenant, created["id"]) as opened:
            assert not (await opened.call_tool("echo", {"text": "a"})).is_error
            doomed.stop()
            gone = await opened.call_tool("echo", {"text": "b"})
    assert gone.is_error and "error" in gone.result


async def test_unreachable_server_cannot_be_opened(
    client: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    created = await register(client, tenant, url="http://127.0.0.1:9/mcp", timeoutSeconds=2)
    with pytest.raises(BadGateway) as refused:
        async with _session(services, tenant, created["id"]):
            pass
    assert refused.value.reason == "MCP_UNREACHABLE"


@pytest.fixture(scope="module", params=["streamableHttp", "sse"])
def everything(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """server-everything in each of its HTTP modes: (transport, endpoint URL)."""
    with everything_peer(request.param) as base:
        streamable = request.param == "streamableHttp"
        yield ("streamable_http", f"{base}/mcp") if streamable else ("sse", f"{base}/sse")


async def test_the_reference_server(
    client: httpx.AsyncClient, services: Services, tenant: Tenant, everything: tuple[str, str]
) -> None:
    transport, url = everything
    created = await register(client, tenant, url=url, transport=transport, timeoutSeconds=10)
    listed = await tools_of(client, tenant, created["id"])
    assert listed.status_code == 200, listed.text
    tools = {tool["name"]: tool for tool in listed.json()["data"]}
    assert {"echo", "get-sum"} <= set(tools)
    assert tools["echo"]["inputSchema"]["properties"]["message"]["type"] == "string"
    async with _session(services, tenant, created["id"]) as opened:
        echoed = await opened.call_tool("echo", {"message": "from threadline"})
        summed = await opened.call_tool("get-sum", {"a": 19, "b": 23})
        invalid = await opened.call_tool("get-sum", {"a": "nineteen"})
    assert (echoed.result, echoed.is_error) == ("Echo: from threadline", False)
    assert not summed.is_error and "42" in str(summed.result)
    assert invalid.is_error
