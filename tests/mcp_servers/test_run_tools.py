"""A run's ``mcp`` tool entries: the server's tools offered under their own names through one session per
server for the run's calls, ``allowedTools`` and ``requireApproval``, a dead server's calls failing while the
run goes on; and a server the organization cannot see refused as one that does not exist."""

from __future__ import annotations

import httpx

from tests.mcp_servers.helpers import register
from tests.mcp_servers.peers import PythonPeer
from tests.runs.helpers import DONE, read_stream, start_run, wait_for_status
from tests.support import Tenant, assert_error, free_port, make_thread


def completions(events: list[object]) -> dict[str, dict[str, object]]:
    return {e["toolCallId"]: e for e in events if isinstance(e, dict) and e["type"] == "tool_call_complete"}


async def test_a_server_of_another_organization_does_not_exist(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, peer: PythonPeer
) -> None:
    theirs = await register(client, other_tenant, url=peer.base + "/mcp")
    thread = await make_thread(client, tenant)
    for server_id in (theirs["id"], "mcp_nothing"):
        body = {"tools": [{"type": "mcp", "serverId": server_id}]}
        response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json=body)
        assert_error(response, 404, "NOT_FOUND", operation_id="runs.create")


async def test_mcp_tools_in_a_run_with_approval_and_one_session(
    client: httpx.AsyncClient, tenant: Tenant, peer: PythonPeer
) -> None:
    server = await register(client, tenant, url=peer.base + "/mcp")
    entry = {
        "type": "mcp",
        "serverId": server["id"],
        "allowedTools": ["echo", "add"],
        "requireApproval": ["add"],
    }
    prompt = '#call=echo {"text": "hi"}\n#call=add {"a": 1, "b": 2}\n#call=explode {}'
    peer.seen_ports.clear()
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, tools=[entry], input=prompt)
    waiting = await wait_for_status(client, tenant, run["id"], "requires_action")
    assert waiting["requiredAction"]["type"] == "approve_tool_calls"
    assert [c["name"] for c in waiting["requiredAction"]["toolCalls"]] == ["add"]
    decisions = {"decisions": [{"toolCallId": "call_2", "approve": True}]}
    answered = await client.post(f"/v1/runs/{run['id']}/approvals", headers=tenant.secret, json=decisions)
    assert answered.status_code == 200, answered.text
    await wait_for_status(client, tenant, run["id"], "completed")
    events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
    done = completions(events)
    assert (done["call_1"]["result"], done["call_1"]["isError"]) == ({"result": "hi"}, False)
    assert (done["call_2"]["result"], done["call_2"]["isError"]) == ({"sum": 3}, False)
    assert done["call_3"]["isError"] is True  # not in allowedTools: not offered
    assert events[-1] == DONE
    # One session (one kept-alive connection) per server per stretch of execution: before the wait (the
    # handshake, the tool list, echo) and after it (the handshake, the list, add), never one per call.
    assert len(peer.seen_ports) >= 6
    assert len(set(peer.seen_ports)) == 2


async def test_a_dead_server_fails_its_calls_and_the_run_goes_on(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    server = await register(client, tenant, url=f"http://127.0.0.1:{free_port()}/mcp", timeoutSeconds=2)
    entry = {"type": "mcp", "serverId": server["id"], "requireApproval": "never"}
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, tools=[entry], input='#call=echo {"text": "hi"}')
    ended = await wait_for_status(client, tenant, run["id"], "completed", "failed")
    assert ended["status"] == "completed"
    events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
    assert completions(events)["call_1"]["isError"] is True
