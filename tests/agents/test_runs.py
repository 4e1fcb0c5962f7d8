"""Runs made from agents: the effective fields (the run's own over the agent version's), version pinning,
404s like any resource, and a deleted agent's runs keeping their record. Also an automation's action."""

from __future__ import annotations

import json

import httpx
import jsonschema

from tests.agents.helpers import SCHEMA, create_agent, update_agent
from tests.runs.helpers import start_run, wait_for_status
from tests.support import Tenant, assert_error, make_thread

BUILTIN = [{"type": "builtin", "name": "query_logs", "requireApproval": False}]
FUNCTION = [{"type": "function", "name": "lookup", "description": "", "parameters": {"type": "object"}}]


async def test_a_run_without_agent_records_none(client: httpx.AsyncClient, tenant: Tenant) -> None:
    run = await start_run(client, tenant, await make_thread(client, tenant))
    assert (run["agentId"], run["agentVersion"]) == (None, None)
    await wait_for_status(client, tenant, run["id"], "completed")


async def test_the_agents_fields_apply_and_the_runs_own_override_them(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    agent = await create_agent(
        client,
        tenant,
        model="offline/scripted",
        instructions="Be terse.",
        tools=BUILTIN,
        actionTimeoutSeconds=60,
    )
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, agentId=agent["id"], input="hello")
    assert (run["agentId"], run["agentVersion"]) == (agent["id"], 1)
    assert (run["model"], run["instructions"], run["tools"]) == ("offline/scripted", "Be terse.", BUILTIN)
    assert run["actionTimeoutSeconds"] == 60
    done = await wait_for_status(client, tenant, run["id"], "completed")
    assert (done["agentId"], done["agentVersion"], done["instructions"]) == (agent["id"], 1, "Be terse.")
    own = await start_run(
        client,
        tenant,
        thread,
        agentId=agent["id"],
        instructions="Be kind.",
        tools=FUNCTION,
        actionTimeoutSeconds=5,
    )
    assert (own["instructions"], own["tools"], own["actionTimeoutSeconds"]) == ("Be kind.", FUNCTION, 5)
    assert (own["model"], own["agentId"], own["agentVersion"]) == ("offline/scripted", agent["id"], 1)
    await wait_for_status(client, tenant, own["id"], "completed", "requires_action", "failed")
    await client.post(f"/v1/runs/{own['id']}/cancel", headers=tenant.secret)


async def test_an_agent_without_model_or_instructions_takes_the_organizations(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    await client.patch("/v1/settings", headers=tenant.secret, json={"instructions": "House rules."})
    agent = await create_agent(client, tenant)
    run = await start_run(client, tenant, await make_thread(client, tenant), agentId=agent["id"])
    assert (run["model"], run["instructions"], run["tools"]) == ("offline/scripted", "House rules.", None)
    assert run["actionTimeoutSeconds"] == 600
    await wait_for_status(client, tenant, run["id"], "completed")


async def test_latest_by_default_and_a_pinned_version_runs_as_it_was(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    agent = await create_agent(client, tenant, instructions="first")
    await update_agent(client, tenant, agent["id"], instructions="second")
    thread = await make_thread(client, tenant)
    latest = await start_run(client, tenant, thread, agentId=agent["id"])
    assert (latest["agentVersion"], latest["instructions"]) == (2, "second")
    await wait_for_status(client, tenant, latest["id"], "completed")
    pinned = await start_run(client, tenant, thread, agentId=agent["id"], agentVersion=1)
    assert (pinned["agentVersion"], pinned["instructions"]) == (1, "first")
    await wait_for_status(client, tenant, pinned["id"], "completed")


async def test_unknown_agents_and_versions(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant)
    theirs = await create_agent(client, other_tenant)
    mine = await create_agent(client, tenant)
    for body in (
        {"agentId": theirs["id"]},
        {"agentId": "agt_nope"},
        {"agentId": mine["id"], "agentVersion": 2},
    ):
        response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json=body)
        assert_error(response, 404, "NOT_FOUND", operation_id="runs.create")
    alone = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json={"agentVersion": 1})
    assert_error(
        alone, 400, "BAD_REQUEST", operation_id="runs.create", reason="VALIDATION_FAILED", missing=["agentId"]
    )
    zero = await client.post(
        f"/v1/threads/{thread}/runs", headers=tenant.secret, json={"agentId": mine["id"], "agentVersion": 0}
    )
    assert zero.status_code == 400
    runs = (await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret)).json()["data"]
    assert runs == []


async def test_a_deleted_agents_runs_keep_their_record(client: httpx.AsyncClient, tenant: Tenant) -> None:
    agent = await create_agent(client, tenant, instructions="kept")
    run = await start_run(client, tenant, await make_thread(client, tenant), agentId=agent["id"])
    await wait_for_status(client, tenant, run["id"], "completed")
    assert (await client.delete(f"/v1/agents/{agent['id']}", headers=tenant.secret)).status_code == 200
    after = (await client.get(f"/v1/runs/{run['id']}", headers=tenant.secret)).json()
    assert (after["agentId"], after["agentVersion"], after["instructions"]) == (agent["id"], 1, "kept")
    again = await client.post(
        f"/v1/threads/{run['threadId']}/runs", headers=tenant.secret, json={"agentId": agent["id"]}
    )
    assert_error(again, 404, "NOT_FOUND", operation_id="runs.create")


async def test_an_automations_runs_use_its_agent(client: httpx.AsyncClient, tenant: Tenant) -> None:
    agent = await create_agent(client, tenant, instructions="Triage.", tools=BUILTIN)
    await update_agent(client, tenant, agent["id"], instructions="Triage harder.")
    body = {
        "name": "triage",
        "enabled": False,
        "trigger": {"type": "schedule", "cron": "0 * * * *"},
        "action": {"prompt": "An error arrived.", "agentId": agent["id"], "agentVersion": 1},
    }
    created = await client.post("/v1/automations", headers=tenant.secret, json=body)
    assert created.status_code == 201, created.text
    automation = created.json()
    assert automation["action"] == {
        "prompt": "An error arrived.", "threadId": None, "model": None, "agentId": agent["id"],
        "agentVersion": 1, "responseFormat": None,
    }  # fmt: skip
    try:
        fired = await client.post(f"/v1/automations/{automation['id']}/trigger", headers=tenant.secret)
        assert fired.status_code == 201, fired.text
        run = fired.json()
        assert (run["agentId"], run["agentVersion"], run["automationId"]) == (
            agent["id"],
            1,
            automation["id"],
        )
        assert (run["instructions"], run["tools"]) == ("Triage.", BUILTIN)
        await wait_for_status(client, tenant, run["id"], "completed")
        latest = {**body["action"], "agentVersion": None}  # type: ignore[dict-item]
        patched = await client.patch(
            f"/v1/automations/{automation['id']}", headers=tenant.secret, json={"action": latest}
        )
        assert patched.status_code == 200, patched.text
        fired = await client.post(f"/v1/automations/{automation['id']}/trigger", headers=tenant.secret)
        assert (fired.json()["agentVersion"], fired.json()["instructions"]) == (2, "Triage harder.")
        await wait_for_status(client, tenant, fired.json()["id"], "completed")
    finally:
        await client.delete(f"/v1/automations/{automation['id']}", headers=tenant.secret)


async def test_an_automation_names_only_an_agent_it_can_see(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    theirs = await create_agent(client, other_tenant)
    mine = await create_agent(client, tenant)
    trigger = {"type": "schedule", "cron": "0 * * * *"}
    for action, status in [
        ({"agentId": theirs["id"]}, 404),
        ({"agentId": mine["id"], "agentVersion": 9}, 404),
        ({"agentVersion": 1}, 400),
    ]:
        body = {"name": "x", "enabled": False, "trigger": trigger, "action": {"prompt": "p", **action}}
        response = await client.post("/v1/automations", headers=tenant.secret, json=body)
        assert response.status_code == status, response.text
        assert response.json()["operationId"] == "automations.create"


async def test_the_agents_response_format_shapes_the_answer_unless_the_run_gives_its_own(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    triage = {"type": "json_schema", "name": "triage", "schema": SCHEMA, "strict": True}
    agent = await create_agent(client, tenant, responseFormat=triage)
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, agentId=agent["id"], input="#notools The disk is full.")
    assert run["responseFormat"] == triage
    await wait_for_status(client, tenant, run["id"], "completed")
    messages = (await client.get(f"/v1/threads/{thread}/messages", headers=tenant.secret)).json()["data"]
    jsonschema.validate(json.loads(messages[-1]["content"]), SCHEMA)
    text = await start_run(client, tenant, thread, agentId=agent["id"], responseFormat={"type": "text"})
    assert text["responseFormat"] == {"type": "text"}
    await wait_for_status(client, tenant, text["id"], "completed")


async def test_an_automation_with_a_structured_agent_answers_documents(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The point of agents and structured output together: the automation names the agent only, and each
    firing's answer is a document valid against the agent's schema."""
    triage = {"type": "json_schema", "name": "triage", "schema": SCHEMA, "strict": True}
    agent = await create_agent(client, tenant, instructions="Triage.", responseFormat=triage)
    body = {
        "name": "triage",
        "enabled": False,
        "trigger": {"type": "schedule", "cron": "0 * * * *"},
        "action": {"prompt": "#notools payments: card gateway answered 502", "agentId": agent["id"]},
    }
    created = await client.post("/v1/automations", headers=tenant.secret, json=body)
    assert created.status_code == 201, created.text
    automation = created.json()
    try:
        fired = await client.post(f"/v1/automations/{automation['id']}/trigger", headers=tenant.secret)
        assert fired.status_code == 201, fired.text
        run = fired.json()
        assert (run["agentId"], run["responseFormat"]) == (agent["id"], triage)
        await wait_for_status(client, tenant, run["id"], "completed")
        path = f"/v1/threads/{run['threadId']}/messages"
        answer = (await client.get(path, headers=tenant.secret)).json()["data"][-1]
        assert answer["metadata"] == {"responseFormat": "triage"}
        jsonschema.validate(json.loads(answer["content"]), SCHEMA)
    finally:
        await client.delete(f"/v1/automations/{automation['id']}", headers=tenant.secret)
