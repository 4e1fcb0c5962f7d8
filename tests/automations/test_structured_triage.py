"""The point of structured output, end to end in both shapes: an error log arrives, the automation watching
for errors starts a run with the automation's ``responseFormat``, and the answer is a triage document a
program can read (``{severity, component, summary}``), from ``offline/scripted`` with no provider."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema

from tests.automations.helpers import automation_runs, create
from tests.runs.helpers import wait_for_status
from tests.support import Tenant
from threadline.runtime import Services

TRIAGE = {
    "type": "json_schema",
    "name": "triage",
    "schema": {
        "type": "object",
        "properties": {
            "severity": {"type": "string", "enum": ["critical", "high", "medium", "low"]},
            "component": {"type": "string", "maxLength": 40},
            "summary": {"type": "string"},
        },
        "required": ["severity", "component", "summary"],
        "additionalProperties": False,
    },
    "strict": True,
}


async def test_an_error_log_becomes_a_triage_document(
    client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    body: dict[str, Any] = {
        "name": "triage errors",
        "trigger": {"type": "log", "projectId": tenant.project_id, "level": "error"},
        "action": {"prompt": "#notools Triage this error log.", "responseFormat": TRIAGE},
    }
    automation = await create(client, tenant, body)
    assert automation["action"]["responseFormat"] == TRIAGE
    response = await intake.post(
        "/v1/logs",
        headers=tenant.public,
        json=[{"message": "payments: card gateway answered 502", "level": "error"}],
    )
    assert response.status_code == 202, response.text
    await services.log_triggers.settle()
    [run] = await automation_runs(client, tenant, automation["id"])
    assert run["responseFormat"] == TRIAGE
    done = await wait_for_status(client, tenant, run["id"], "completed", "failed")
    assert done["status"] == "completed", done["error"]

    messages = await client.get(f"/v1/threads/{run['threadId']}/messages", headers=tenant.secret)
    answer = messages.json()["data"][-1]
    assert answer["role"] == "assistant" and answer["metadata"] == {"responseFormat": "triage"}
    triage = json.loads(answer["content"])
    jsonschema.validate(triage, TRIAGE["schema"])
    assert triage["severity"] == "critical"
    assert triage["summary"].startswith("Triage this error log.")  # quotes the request, directives left out

    # Editing the automation without a format sets it back to text; with one, to that one.
    changed = await client.patch(
        f"/v1/automations/{automation['id']}", headers=tenant.secret, json={"action": {"prompt": "x"}}
    )
    assert changed.json()["action"]["responseFormat"] is None
    bad = {"prompt": "x", "responseFormat": {"type": "json_schema", "name": "t", "schema": {"type": 1}}}
    refused = await client.patch(
        f"/v1/automations/{automation['id']}", headers=tenant.secret, json={"action": bad}
    )
    assert refused.status_code == 400 and "responseFormat" in refused.text
