"""Agents in a real browser: save an agent from the Agents page (a refusal shown at its field first), edit
it into version 2 and see the versions side by side with what changed, start a run on a thread from the
agent's page, and pick the agent in the thread page's run form; axe on each page."""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in


def api(served: Served, method: str, path: str, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {served.secret_key}"}
    response = httpx.request(method, f"{served.url}/v1{path}", headers=headers, timeout=30, **kwargs)
    assert response.status_code < 300, response.text
    return response.json()


async def test_agents(page: Page, served: Served) -> None:
    thread = api(served, "POST", "/threads", json={"title": "Ticket 4711"})
    await sign_in(page, served.url, served.email, served.password)
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Agents").click()
    await expect(page).to_have_url(f"{served.url}/agents")
    await expect(page.get_by_text("No agents yet.")).to_be_visible()
    await assert_accessible(page)

    form = page.get_by_role("form", name="New agent")
    await form.get_by_label("Name").fill("Support triage")
    await form.get_by_label("Model").fill("gpt-4")
    await form.get_by_label("Instructions").fill("Triage the ticket.")
    await form.get_by_label("Tools (JSON)").fill('[{"type": "builtin", "name": "search_messages"}]')
    await form.get_by_role("button", name="Save agent").click()
    await expect(page.locator("#new-agent-model-error")).to_contain_text("Unknown model")
    await assert_accessible(page)
    form = page.get_by_role("form", name="New agent")
    await expect(form.get_by_label("Instructions")).to_have_value("Triage the ticket.")
    await form.get_by_label("Model").fill("offline/scripted")
    await form.get_by_role("button", name="Save agent").click()
    await expect(page.get_by_role("heading", name="Support triage", level=1)).to_be_visible()
    agent_id = re.sub(r".*/agents/", "", page.url)
    await assert_accessible(page)

    edit = page.get_by_role("form", name="Edit")
    await edit.get_by_label("Instructions").fill("Triage the ticket; name the component.")
    await edit.get_by_label("Response format (JSON)").fill(
        '{"type": "json_schema", "name": "triage", "schema": {"type": "object", "required": ["component"]}}'
    )
    await edit.get_by_role("button", name="Save version 2").click()
    versions = page.get_by_role("region", name="Versions")
    await expect(versions.get_by_role("columnheader", name=re.compile("^v2"))).to_be_visible()
    await expect(versions.get_by_role("columnheader", name=re.compile("^v1"))).to_be_visible()
    changed = versions.locator("td.changed")
    await expect(changed).to_have_count(2)
    await expect(versions.get_by_role("row", name=re.compile("^Instructions"))).to_contain_text("changed")
    await expect(versions.get_by_role("row", name=re.compile("^Model"))).not_to_contain_text("changed")
    await assert_accessible(page)
    await screenshot(page, "agent-versions")

    run_form = page.locator("#agent-run")
    await run_form.get_by_label("Thread").select_option(thread["id"])
    await run_form.get_by_label("Message").fill("#notools The checkout is down.")
    await run_form.get_by_role("button", name="Start run").click()
    await expect(page).to_have_url(re.compile(f"/threads/{thread['id']}"))
    runs = api(served, "GET", f"/threads/{thread['id']}/runs")["data"]
    assert [(r["agentId"], r["agentVersion"]) for r in runs] == [(agent_id, 2)]
    assert runs[0]["instructions"] == "Triage the ticket; name the component."
    for _ in range(200):
        if api(served, "GET", f"/runs/{runs[0]['id']}")["status"] in ("completed", "failed"):
            break
        await page.wait_for_timeout(50)

    await page.reload()
    agent = page.get_by_label("Agent")
    await expect(agent.locator("option", has_text="Support triage (v2)")).to_have_count(1)
    await agent.select_option(agent_id)
    await page.get_by_role("textbox", name="Message").fill("#notools And now?")
    await page.get_by_role("button", name="Start run").click()
    await expect(page).to_have_url(re.compile(f"/threads/{thread['id']}"))
    latest = api(served, "GET", f"/threads/{thread['id']}/runs")["data"]
    assert [(r["agentId"], r["agentVersion"]) for r in latest] == [(agent_id, 2)] * 2
    await assert_accessible(page)
    await screenshot(page, "thread-run-with-agent")
