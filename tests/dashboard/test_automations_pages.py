"""The automations pages through the ASGI client: the list with triggers in words, the form for both
trigger types with the API's rules at the field, the switch, "Run now", delete, and the organization
boundary."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.automations.helpers import leave_nothing_behind
from tests.dashboard.support import Dashboard
from tests.runs.helpers import wait_for_status
from tests.support import Tenant, make_thread
from threadline.runtime import Services

SCHEDULE = {
    "name": "Morning digest",
    "enabled": "on",
    "trigger_type": "schedule",
    "cron": "0 8 * * 1-5",
    "timezone": "Europe/Berlin",
    "prompt": "Summarise yesterday.",
}
ON_ERRORS = {
    "name": "Timeouts",
    "enabled": "on",
    "trigger_type": "log",
    "level": "error",
    "contains": "timeout",
    "cooldown_seconds": "60",
    "prompt": "Look into this.",
}


@pytest.fixture(autouse=True)
async def clean(services: Services) -> AsyncIterator[None]:
    yield
    await leave_nothing_behind(services)


async def created(dashboard: Dashboard, form: dict[str, str]) -> str:
    """The new automation's id, after the form was accepted."""
    response = await dashboard.post("/automations/new", form)
    assert response.status_code == 303, response.text
    found = re.fullmatch(r"/automations/(aut_\w+)", response.headers["location"])
    assert found is not None
    return found.group(1)


def field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="field-error" id="{field}-error">([^<]*)</p>', html)
    assert found is not None, f"no error at {field}"
    return found.group(1)


async def test_list_shows_each_trigger_in_words(dashboard: Dashboard, tenant: Tenant) -> None:
    empty = await dashboard.get("/automations")
    assert empty.status_code == 200 and "No automations yet" in empty.text
    assert "New automation" in empty.text
    await created(dashboard, SCHEDULE)
    await created(dashboard, {**ON_ERRORS, "project_id": tenant.project_id})
    page = (await dashboard.get("/automations")).text
    assert "weekdays at 08:00, Europe/Berlin" in page
    assert "error logs of project " in page and "containing &#39;timeout&#39;" in page
    assert "at most once every minute" in page
    assert page.count('role="switch" aria-checked="true"') == 2
    assert page.count(">Run now</button>") == 2
    forms = re.findall(r'<form method="post".*?</form>', page, re.DOTALL)
    assert len(forms) == 6 and all(f'name="csrf_token" value="{dashboard.csrf}"' in f for f in forms)
    next_run = re.search(r'<time datetime="([^"]+)">', page)
    assert next_run is not None and next_run.group(1).endswith(("06:00:00.000Z", "07:00:00.000Z"))


async def test_a_schedule_is_created_as_the_api_would(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    automation_id = await created(dashboard, SCHEDULE)
    stored = (await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)).json()
    assert stored["trigger"] == {"type": "schedule", "cron": "0 8 * * 1-5", "timezone": "Europe/Berlin"}
    assert stored["action"] == {
        "prompt": "Summarise yesterday.",
        "threadId": None,
        "model": None,
        "agentId": None,
        "agentVersion": None,
        "responseFormat": None,
    }
    assert stored["enabled"] is True and stored["nextRunAt"] is not None
    detail = (await dashboard.get(f"/automations/{automation_id}")).text
    assert "weekdays at 08:00, Europe/Berlin" in detail and "<code>0 8 * * 1-5</code>" in detail
    assert "No runs yet" in detail


async def test_a_log_trigger_on_a_thread_is_created(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread_id = await make_thread(client, tenant)
    automation_id = await created(
        dashboard, {**ON_ERRORS, "enabled": "", "cooldown_seconds": "", "thread_id": thread_id}
    )
    stored = (await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)).json()
    assert stored["enabled"] is False
    assert stored["trigger"] == {
        "type": "log",
        "projectId": None,
        "level": "error",
        "contains": "timeout",
        "cooldownSeconds": 300,
    }
    assert stored["action"]["threadId"] == thread_id


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "  "}, "name", "Required."),
        ({"cron": "every morning"}, "cron", "Not a cron expression: use five fields"),
        ({"timezone": "Mars/Olympus"}, "timezone", "Unknown time zone &#39;Mars/Olympus&#39;"),
        ({"prompt": ""}, "prompt", "Required."),
        ({"model": "gpt"}, "model", ""),
        ({"thread_id": "thr_00000000000000000000000000"}, "thread_id", "Thread thr_0000"),
        ({"trigger_type": "webhook"}, "trigger_type", "Choose a schedule or a log trigger."),
    ],
)
async def test_schedule_form_errors_are_at_the_field(
    dashboard: Dashboard, changes: dict[str, str], field: str, message: str
) -> None:
    response = await dashboard.post("/automations/new", {**SCHEDULE, **changes})
    assert response.status_code == 400
    assert field_error(response.text, field).startswith(message)
    assert 'aria-invalid="true"' in response.text and "was not saved" in response.text
    assert (await dashboard.get("/automations")).text.count("Morning digest") == 0


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"cooldown_seconds": "soon"}, "cooldown_seconds", "Enter a whole number of seconds"),
        ({"cooldown_seconds": "99999999"}, "cooldown_seconds", "Input should be less than or equal"),
        ({"level": "loud"}, "level", "Unknown level &#39;loud&#39;"),
        ({"project_id": "prj_00000000000000000000000000"}, "project_id", "Project prj_0000"),
    ],
)
async def test_log_form_errors_are_at_the_field(
    dashboard: Dashboard, changes: dict[str, str], field: str, message: str
) -> None:
    response = await dashboard.post("/automations/new", {**ON_ERRORS, **changes})
    assert response.status_code == 400
    assert field_error(response.text, field).startswith(message)
    assert 'value="Timeouts"' in response.text  # what was typed stays


async def test_editing_keeps_the_rules_and_saves(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    automation_id = await created(dashboard, SCHEDULE)
    form = (await dashboard.get(f"/automations/{automation_id}/edit")).text
    assert 'value="0 8 * * 1-5"' in form and 'value="Europe/Berlin"' in form
    refused = await dashboard.post(f"/automations/{automation_id}/edit", {**SCHEDULE, "cron": "61 * * * *"})
    assert refused.status_code == 400 and field_error(refused.text, "cron")
    saved = await dashboard.post(f"/automations/{automation_id}/edit", ON_ERRORS)
    assert saved.status_code == 303 and saved.headers["location"] == f"/automations/{automation_id}"
    stored = (await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)).json()
    assert stored["name"] == "Timeouts" and stored["trigger"]["type"] == "log"
    assert stored["nextRunAt"] is None


async def test_the_switch_disables_and_enables(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    automation_id = await created(dashboard, SCHEDULE)
    off = await dashboard.post(f"/automations/{automation_id}/enabled", {"enabled": "false"})
    assert off.status_code == 303 and off.headers["location"] == "/automations"
    stored = (await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)).json()
    assert stored["enabled"] is False and stored["nextRunAt"] is None
    assert 'aria-checked="false"' in (await dashboard.get("/automations")).text
    back = f"/automations/{automation_id}"
    on = await dashboard.post(f"/automations/{automation_id}/enabled", {"enabled": "true", "back": back})
    assert on.headers["location"] == back
    stored = (await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)).json()
    assert stored["enabled"] is True and stored["nextRunAt"] is not None
    elsewhere = await dashboard.post(
        f"/automations/{automation_id}/enabled", {"enabled": "true", "back": "https://evil.test"}
    )
    assert elsewhere.headers["location"] == "/automations"


async def test_run_now_starts_a_run_shown_on_its_page(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    automation_id = await created(dashboard, {**SCHEDULE, "enabled": ""})
    response = await dashboard.post(f"/automations/{automation_id}/run")
    assert response.status_code == 303
    found = re.fullmatch(rf"/automations/{automation_id}\?started=(run_\w+)", response.headers["location"])
    assert found is not None
    run_id = found.group(1)
    run = await wait_for_status(client, tenant, run_id, "completed")
    assert run["automationId"] == automation_id
    page = (await dashboard.get(response.headers["location"])).text
    assert f'Started run <a class="mono" href="/runs/{run_id}">' in page
    assert f'href="/runs/{run_id}"' in page and "Run now</td>" in page
    fragment = await dashboard.get(f"/automations/{automation_id}/runs", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and f'href="/runs/{run_id}"' in fragment.text
    assert "<html" not in fragment.text


async def test_run_now_refused_shows_why(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread_id = await make_thread(client, tenant)
    automation_id = await created(dashboard, {**SCHEDULE, "thread_id": thread_id})
    assert (await client.delete(f"/v1/threads/{thread_id}", headers=tenant.secret)).status_code == 200
    response = await dashboard.post(f"/automations/{automation_id}/run")
    assert response.status_code == 409
    assert (
        "The run was not started" in response.text and f"thread {thread_id} no longer exists" in response.text
    )


async def test_delete_removes_it(dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant) -> None:
    automation_id = await created(dashboard, SCHEDULE)
    listed = (await dashboard.get("/automations")).text
    assert 'data-confirm="Delete the automation “Morning digest”?' in listed
    response = await dashboard.post(f"/automations/{automation_id}/delete")
    assert response.status_code == 303 and response.headers["location"] == "/automations"
    gone = await client.get(f"/v1/automations/{automation_id}", headers=tenant.secret)
    assert gone.status_code == 404
    assert (await dashboard.get(f"/automations/{automation_id}")).status_code == 404


async def test_another_organizations_automation_is_not_found(
    dashboard: Dashboard, client: httpx.AsyncClient, other_tenant: Tenant
) -> None:
    body: dict[str, Any] = {
        "name": "Theirs",
        "trigger": {"type": "schedule", "cron": "@daily"},
        "action": {"prompt": "Hello."},
    }
    theirs = (await client.post("/v1/automations", json=body, headers=other_tenant.secret)).json()["id"]
    for url in (f"/automations/{theirs}", f"/automations/{theirs}/edit"):
        response = await dashboard.get(url)
        assert response.status_code == 404 and "Not found" in response.text
    for url, form in (
        (f"/automations/{theirs}/edit", SCHEDULE),
        (f"/automations/{theirs}/enabled", {"enabled": "false"}),
        (f"/automations/{theirs}/run", {}),
        (f"/automations/{theirs}/delete", {}),
    ):
        response = await dashboard.post(url, form)
        assert response.status_code == 404, url
    still = (await client.get(f"/v1/automations/{theirs}", headers=other_tenant.secret)).json()
    assert still["name"] == "Theirs" and still["enabled"] is True
    assert "Theirs" not in (await dashboard.get("/automations")).text


async def test_changes_need_the_csrf_token(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    automation_id = await created(dashboard, SCHEDULE)
    for url, form in (
        ("/automations/new", SCHEDULE),
        (f"/automations/{automation_id}/enabled", {"enabled": "false"}),
        (f"/automations/{automation_id}/run", {}),
        (f"/automations/{automation_id}/delete", {}),
    ):
        response = await dashboard.http.post(url, data=form)
        assert response.status_code == 403, url
    stored = (await client.get("/v1/automations", headers=tenant.secret)).json()["data"]
    assert [(a["id"], a["enabled"], a["lastTriggeredAt"]) for a in stored] == [(automation_id, True, None)]


async def test_names_and_prompts_are_text(dashboard: Dashboard) -> None:
    automation_id = await created(
        dashboard, {**ON_ERRORS, "name": "<script>alert(1)</script>", "contains": "<b>x</b>", "prompt": "<i>"}
    )
    for url in ("/automations", f"/automations/{automation_id}", f"/automations/{automation_id}/edit"):
        page = (await dashboard.get(url)).text
        assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<b>x</b>" not in page


async def test_pages_need_a_session(anonymous: Dashboard) -> None:
    response = await anonymous.get("/automations/new")
    assert response.status_code == 303 and response.headers["location"].startswith("/login")
