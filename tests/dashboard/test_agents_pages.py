"""/agents over ASGI: saving an agent (refusals at their fields), editing it into versions shown side by
side with what changed, starting a run with it from its page and from the thread page, deleting it, and
another organization's agent as the 404 page."""

from __future__ import annotations

import re

import httpx

from tests.dashboard.support import Dashboard
from tests.runs.helpers import wait_for_status
from tests.support import Tenant, make_thread

NEW = {
    "name": "Support triage",
    "model": "offline/scripted",
    "instructions": "Triage the ticket.",
    "tools": '[{"type": "builtin", "name": "query_logs"}]',
    "response_format": "",
    "action_timeout": "",
}


async def saved(dashboard: Dashboard, form: dict[str, str]) -> str:
    posted = await dashboard.post("/agents", form)
    assert posted.status_code == 303, posted.text
    found = re.fullmatch(r"/agents/(agt_[0-9a-z]{26})", posted.headers["location"])
    assert found is not None
    return found.group(1)


async def test_save_edit_and_see_the_versions_side_by_side(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    assert "No agents yet." in (await dashboard.get("/agents")).text
    agent_id = await saved(dashboard, NEW)
    listed = (await dashboard.get("/agents")).text
    assert f'id="agent-{agent_id}"' in listed and "Support triage" in listed
    edited = await dashboard.post(
        f"/agents/{agent_id}", {**NEW, "instructions": "Triage it fast.", "model": ""}
    )
    assert edited.status_code == 303
    api = (await client.get(f"/v1/agents/{agent_id}", headers=tenant.secret)).json()
    assert (api["version"], api["instructions"], api["model"]) == (2, "Triage it fast.", None)
    assert api["tools"] == [{"type": "builtin", "name": "query_logs", "requireApproval": False}]
    page = (await dashboard.get(f"/agents/{agent_id}")).text
    assert '<th scope="col">v2' in page and '<th scope="col">v1' in page
    changed = re.findall(r'class="changed" data-version="(\d)" data-field="(\w+)"', page)
    assert sorted(changed) == [("2", "instructions"), ("2", "model")]
    assert "Save version 3" in page


async def test_refusals_at_their_fields(dashboard: Dashboard) -> None:
    for form, field, words in [
        ({**NEW, "name": ""}, "new-agent-name", "at least 1 character"),
        ({**NEW, "model": "gpt-4"}, "new-agent-model", "Unknown model"),
        ({**NEW, "tools": "[{"}, "new-agent-tools", "Not JSON"),
        ({**NEW, "response_format": '{"type": "json_schema", "name": "t", "schema": {"type": 3}}'},
         "new-agent-format", "not a valid JSON Schema"),
        ({**NEW, "action_timeout": "soon"}, "new-agent-timeout", "integer"),
    ]:  # fmt: skip
        response = await dashboard.post("/agents", form)
        assert response.status_code == 400, form
        error = re.search(rf'id="{field}-error">([^<]*)<', response.text)
        assert error is not None and words in error.group(1), (field, response.text[-2000:])
    assert "No agents yet." in (await dashboard.get("/agents")).text


async def test_start_a_run_with_the_agent(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    agent_id = await saved(dashboard, NEW)
    thread = await make_thread(client, tenant, title="Ticket 42")
    page = (await dashboard.get(f"/agents/{agent_id}")).text
    assert f'<option value="{thread}">Ticket 42</option>' in page
    started = await dashboard.post(f"/agents/{agent_id}/runs", {"thread": thread, "message": "#notools help"})
    assert started.status_code == 303 and started.headers["location"].startswith(f"/threads/{thread}")
    thread_page = (await dashboard.get(f"/threads/{thread}")).text
    assert f'<option value="{agent_id}">Support triage (v1)</option>' in thread_page
    first = (await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret)).json()["data"][0]
    await wait_for_status(client, tenant, first["id"], "completed", "failed", "cancelled")
    await dashboard.post(f"/agents/{agent_id}", {**NEW, "instructions": "Second."})
    again = await dashboard.post(f"/threads/{thread}/runs", {"message": "#notools more", "agent": agent_id})
    assert again.status_code == 303
    runs = (await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret)).json()["data"]
    assert [(r["agentId"], r["agentVersion"]) for r in runs] == [(agent_id, 2), (agent_id, 1)]
    assert runs[0]["instructions"] == "Second."
    run_page = (await dashboard.get(f"/runs/{runs[0]['id']}")).text
    assert f'<a href="/agents/{agent_id}"><code>{agent_id}</code></a> v2' in run_page
    for run in runs:
        await wait_for_status(client, tenant, run["id"], "completed", "failed", "cancelled")
    deleted = await dashboard.post(f"/agents/{agent_id}/delete")
    assert deleted.status_code == 303 and deleted.headers["location"] == "/agents"
    refused = await dashboard.post(f"/threads/{thread}/runs", {"message": "x", "agent": agent_id})
    assert refused.status_code == 404 and "was not found" in refused.text


async def test_another_organizations_agent_is_not_found(
    dashboard: Dashboard, client: httpx.AsyncClient, other_tenant: Tenant
) -> None:
    theirs = (await client.post("/v1/agents", headers=other_tenant.secret, json={"name": "theirs"})).json()
    for method, path in [("get", ""), ("post", ""), ("post", "/runs"), ("post", "/delete")]:
        response = await getattr(dashboard, method)(f"/agents/{theirs['id']}{path}")
        assert response.status_code == 404, (method, path)
