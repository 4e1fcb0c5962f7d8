"""The run page of a run waiting for its caller: the pending panel (page and SSE fragments), the
approvals form's rules (CSRF, validation, another organization's run, a stale form) and the panel's end."""

from __future__ import annotations

import httpx

from tests.dashboard.support import Dashboard
from tests.runs.helpers import read_stream, start_run, wait_for_status
from tests.support import Tenant, make_thread
from threadline.dashboard.pages.run_view import fold

NEEDS_APPROVAL = [{"type": "builtin", "name": "create_artifact", "requireApproval": True}]
ASK = '#call=create_artifact {"name": "refund.txt", "content": "refund 40"}'
LOOKUP = [{"type": "function", "name": "lookup_order"}]


async def waiting_run(
    client: httpx.AsyncClient, tenant: Tenant, tools: list[dict[str, object]], text: str
) -> str:
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=text, tools=tools)
    await wait_for_status(client, tenant, run["id"], "requires_action")
    return str(run["id"])


async def test_a_pending_approval_is_decided_from_the_page(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    run_id = await waiting_run(client, tenant, NEEDS_APPROVAL, ASK)
    page = (await dashboard.get(f"/runs/{run_id}")).text
    assert 'class="badge requires_action"' in page and 'aria-label="Pending approval"' in page
    assert f'action="/runs/{run_id}/approvals"' in page and 'name="csrf_token"' in page
    assert (
        'value="approve">Approve</button>' in page and 'value="reject" class="danger">Reject</button>' in page
    )
    assert "Waiting for approval…" in page and "refund 40" in page
    refused = await dashboard.http.post(
        f"/runs/{run_id}/approvals", data={"decision": "approve", "tool_call_id": "call_1"}
    )
    assert refused.status_code == 403
    bad = await dashboard.post(f"/runs/{run_id}/approvals", {"decision": "maybe", "tool_call_id": "call_1"})
    assert bad.status_code == 400
    decided = await dashboard.post(
        f"/runs/{run_id}/approvals",
        {
            "decision": "reject",
            "tool_call_id": "call_1",
            "reason": " Refunds need a manager ",
            "back": "/threads",
        },
    )
    assert decided.status_code == 303 and decided.headers["location"] == "/threads"
    await wait_for_status(client, tenant, run_id, "completed")
    events = await read_stream(client, tenant, f"/v1/runs/{run_id}/stream")
    [complete] = [e for e in events if isinstance(e, dict) and e["type"] == "tool_call_complete"]
    assert complete["isError"] is True
    assert complete["result"] == {"error": "rejected", "reason": "Refunds need a manager"}
    # Folded as a live view's batches: the wait's panel, then what followed it empties the panel.
    stored = [e for e in events if isinstance(e, dict)]
    wait = next(i for i, e in enumerate(stored) if e["type"] == "run_requires_action")
    before, after = fold(stored[: wait + 1]), fold(stored[wait + 1 :])
    assert before.pending == stored[wait]["requiredAction"]
    assert [u.action for u in before.updates] == ["pending"] and before.blocks[
        -2
    ].waiting == "approve_tool_calls"
    assert (
        after.pending is None
        and after.updates[0].action == "resumed"
        and after.updates[-1].action == "completed"
    )
    # A stale form just shows the run as it is now.
    stale = await dashboard.post(
        f"/runs/{run_id}/approvals", {"decision": "approve", "tool_call_id": "call_1"}
    )
    assert stale.status_code == 303 and stale.headers["location"] == f"/runs/{run_id}"
    ended = (await dashboard.get(f"/runs/{run_id}")).text
    assert 'class="badge completed"' in ended and "Pending approval" not in ended


async def test_function_calls_wait_for_the_customers_code(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    run_id = await waiting_run(client, tenant, LOOKUP, '#call=lookup_order {"orderId": "A-1"}')
    page = (await dashboard.get(f"/runs/{run_id}")).text
    assert "Waiting for the customer's code</strong>" in page and "Waiting for the customer's code…" in page
    assert "Approve</button>" not in page
    elsewhere = await waiting_run(client, other_tenant, NEEDS_APPROVAL, ASK)
    denied = await dashboard.post(
        f"/runs/{elsewhere}/approvals", {"decision": "approve", "tool_call_id": "call_1"}
    )
    assert denied.status_code == 404 and "Not found" in denied.text
