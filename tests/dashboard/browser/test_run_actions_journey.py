"""Journey: runs that wait for their caller on the run page. A run waiting for the customer's code says so;
a run opened while it is still queued shows its pending approval live, without a reload, and is rejected
with a reason from the page; another is approved from the page."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in
from tests.dashboard.browser.test_runs_journey import api

LOOKUP = {"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}
APPROVED_ARTIFACT = [{"type": "builtin", "name": "create_artifact", "requireApproval": True}]
ASK_LOOKUP = '#call=lookup_order {"order_id": "A-1001"}'
ASK_REFUND = '#call=create_artifact {"name": "refund.txt", "content": "refund 40"}'


async def waiting(served: Served, run_id: str) -> dict[str, Any]:
    """The run's requiredAction once it waits (the offline model gets there in well under a second)."""
    for _ in range(300):
        run = await asyncio.to_thread(api, served, "GET", f"/runs/{run_id}")
        if run["status"] == "requires_action":
            return dict(run["requiredAction"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"{run_id} never waited")


def completions(served: Served, run_id: str) -> list[dict[str, Any]]:
    body = api(served, "GET", f"/runs/{run_id}/stream")
    events = [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]
    return [e for e in events if e["type"] == "tool_call_complete"]


async def test_pending_actions_on_the_run_page(page: Page, served: Served) -> None:
    thread = api(served, "POST", "/threads", json={"title": "Refunds"})["id"]
    code_run = api(served, "POST", f"/threads/{thread}/runs", json={"input": ASK_LOOKUP, "tools": [LOOKUP]})
    [call] = (await waiting(served, code_run["id"]))["toolCalls"]
    body = {"input": ASK_REFUND, "tools": APPROVED_ARTIFACT, "multitaskStrategy": "enqueue"}
    refund = api(served, "POST", f"/threads/{thread}/runs", json=body)  # queued behind the waiting run

    await sign_in(page, served.url, served.email, served.password)
    await page.goto(f"{served.url}/runs/{code_run['id']}")
    await expect(page.locator("#run-status")).to_have_text("requires_action")
    await expect(page.locator("#run-pending")).to_contain_text("Waiting for the customer's code")
    await expect(page.locator("#run-log .result .pending")).to_have_text("Waiting for the customer's code…")
    await expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    await assert_accessible(page)
    await screenshot(page, "run-waits-for-code")

    await page.goto(f"{served.url}/runs/{refund['id']}")
    await expect(page.locator("#run-status")).to_have_text("queued")
    output = {"toolOutputs": [{"toolCallId": call["id"], "output": {"status": "shipped"}}]}
    api(served, "POST", f"/runs/{code_run['id']}/tool-outputs", json=output)  # the refund run starts now
    approval = page.get_by_role("form", name="Pending approval")
    await expect(approval).to_be_visible(timeout=30_000)  # live: no reload
    await expect(page.locator("#run-status")).to_have_text("requires_action")
    await expect(approval).to_contain_text("create_artifact")
    await expect(approval).to_contain_text("refund 40")
    await expect(page.locator("#run-log .result .pending")).to_have_text("Waiting for approval…")
    await assert_accessible(page)
    await screenshot(page, "run-pending-approval")

    await page.get_by_label("Reason (sent to the model when rejecting)").fill("Refunds need a manager")
    await page.get_by_role("button", name="Reject").click()
    await expect(page.locator("#run-status")).to_have_text("completed", timeout=30_000)
    await expect(page.locator("#run-pending")).to_be_empty()
    await expect(page.locator("#run-log .result.failed")).to_contain_text("Refunds need a manager")
    [rejected] = completions(served, refund["id"])
    assert rejected["isError"] is True
    assert rejected["result"] == {"error": "rejected", "reason": "Refunds need a manager"}
    await screenshot(page, "run-rejected")

    approved = api(
        served, "POST", f"/threads/{thread}/runs", json={"input": ASK_REFUND, "tools": APPROVED_ARTIFACT}
    )
    await waiting(served, approved["id"])
    await page.goto(f"{served.url}/runs/{approved['id']}")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.locator("#run-status")).to_have_text("completed", timeout=30_000)
    await expect(page.get_by_role("link", name="Download refund.txt")).to_be_visible()
    [done] = completions(served, approved["id"])
    assert done["isError"] is False
