"""Automations over HTTP: create, list, get, update, delete, trigger; validation errors name the field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.automations.helpers import create, get, on_log, schedule
from tests.runs.helpers import wait_for_status
from tests.support import Tenant, assert_error, make_thread

FIELDS = {
    "id", "name", "enabled", "trigger", "action", "lastTriggeredAt", "nextRunAt", "lastError", "createdAt",
    "updatedAt",
}  # fmt: skip


class TestCreate:
    async def test_schedule_defaults_and_next_run(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await create(client, tenant, schedule("*/15 * * * *"))
        assert set(created) == FIELDS
        assert created["id"].startswith("aut_")
        assert created["enabled"] is True
        assert created["trigger"] == {"type": "schedule", "cron": "*/15 * * * *", "timezone": "UTC"}
        assert created["action"] == {
            "prompt": "Summarise.",
            "threadId": None,
            "model": None,
            "agentId": None,
            "agentVersion": None,
            "responseFormat": None,
        }
        # The clock stands at 09:59:30Z.
        assert created["nextRunAt"] == "2026-11-21T10:00:00.000Z"
        assert created["lastTriggeredAt"] is None and created["lastError"] is None
        assert created["createdAt"] == created["updatedAt"] == "2026-11-21T09:59:30.000Z"
        assert await get(client, tenant, created["id"]) == created

    async def test_schedule_in_a_time_zone(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await create(client, tenant, schedule("0 9 * * *", "America/New_York"))
        assert created["nextRunAt"] == "2026-11-21T14:00:00.000Z"  # 09:00 EST
        shorthand = await create(client, tenant, schedule("@daily", "Asia/Tokyo"))
        assert shorthand["nextRunAt"] == "2026-11-21T15:00:00.000Z"  # midnight JST

    async def test_log_trigger_defaults(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await create(client, tenant, on_log())
        assert created["trigger"] == {
            "type": "log", "projectId": None, "level": "error", "contains": None, "cooldownSeconds": 300,
        }  # fmt: skip
        assert created["nextRunAt"] is None
        full = await create(
            client,
            tenant,
            on_log(projectId=tenant.project_id, level="WARNING", contains="timeout", cooldownSeconds=0),
        )
        assert full["trigger"] == {
            "type": "log", "projectId": tenant.project_id, "level": "warn", "contains": "timeout",
            "cooldownSeconds": 0,
        }  # fmt: skip

    async def test_disabled_schedule_has_no_next_run(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await create(client, tenant, {**schedule(), "enabled": False})
        assert created["enabled"] is False and created["nextRunAt"] is None

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            (schedule("61 * * * *"), "trigger.cron"),
            (schedule("* * *"), "trigger.cron"),
            (schedule("0 0 30 2 *"), "trigger.cron"),
            (schedule("@sometimes"), "trigger.cron"),
            (schedule("* * * * * *"), "trigger.cron"),  # no per-second schedules
            (schedule("0 * * * *", "Europe"), "trigger.timezone"),  # a folder of the zone database
            ({**schedule(), "name": "a\u0000b"}, "name"),
            ({**schedule(), "action": {"prompt": "a\u0000b"}}, "action.prompt"),
            (on_log(contains="\u0000"), "trigger.contains"),
            (schedule("0 * * * *", "Mars/Olympus_Mons"), "trigger.timezone"),
            (schedule("0 * * * *", "../../etc/passwd"), "trigger.timezone"),
            (
                {**schedule(), "trigger": {"type": "schedule", "cron": "* * * * *", "level": "error"}},
                "trigger.level",
            ),
            (on_log(level="loud"), "trigger.level"),
            (on_log(cooldownSeconds=-1), "trigger.cooldownSeconds"),
            (on_log(cooldownSeconds="60"), "trigger.cooldownSeconds"),
            (on_log(cron="* * * * *"), "trigger.cron"),
            (on_log(contains=""), "trigger.contains"),
            ({**on_log(), "trigger": {"type": "webhook"}}, "trigger.type"),
            ({**on_log(), "action": {"prompt": ""}}, "action.prompt"),
            ({**on_log(), "action": {"prompt": "x", "model": "nobody/model"}}, "action.model"),
            ({**on_log(), "name": "  "}, "name"),
            ({**on_log(), "enabled": "yes"}, "enabled"),
            ({**on_log(), "schedule": "daily"}, "schedule"),
        ],
    )
    async def test_invalid_fields_are_named(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any], field: str
    ) -> None:
        response = await client.post("/v1/automations", headers=tenant.secret, json=body)
        error = assert_error(
            response, 400, "BAD_REQUEST", operation_id="automations.create", reason="VALIDATION_FAILED"
        )
        assert f"{field}:" in str(error["message"]), error["message"]

    @pytest.mark.parametrize(
        ("body", "missing"),
        [
            ({"trigger": {"type": "schedule", "cron": "* * * * *"}, "action": {"prompt": "x"}}, ["name"]),
            ({"name": "n", "trigger": {"type": "schedule"}, "action": {"prompt": "x"}}, ["trigger.cron"]),
            ({"name": "n", "trigger": {"type": "log"}, "action": {}}, ["action.prompt"]),
            ({"name": "n", "action": {"prompt": "x"}}, ["trigger"]),
        ],
    )
    async def test_missing_fields_are_listed(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any], missing: list[str]
    ) -> None:
        response = await client.post("/v1/automations", headers=tenant.secret, json=body)
        assert_error(
            response,
            400,
            "BAD_REQUEST",
            operation_id="automations.create",
            reason="VALIDATION_FAILED",
            missing=missing,
        )

    async def test_references_must_be_the_organizations(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        foreign_thread = await make_thread(client, other_tenant)
        response = await client.post(
            "/v1/automations", headers=tenant.secret, json=schedule(threadId=foreign_thread)
        )
        error = assert_error(response, 404, "NOT_FOUND", operation_id="automations.create")
        assert "action.threadId" in str(error["message"])
        response = await client.post(
            "/v1/automations", headers=tenant.secret, json=on_log(projectId=other_tenant.project_id)
        )
        error = assert_error(response, 404, "NOT_FOUND", operation_id="automations.create")
        assert "trigger.projectId" in str(error["message"])

    async def test_requires_a_secret_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/automations", json=schedule())
        assert_error(
            response, 401, "UNAUTHORIZED", operation_id="automations.create", missing=["Authorization"]
        )
        response = await client.get("/v1/automations", headers=tenant.public)
        assert_error(
            response, 403, "FORBIDDEN", operation_id="automations.list", reason="PUBLIC_KEY_NOT_ALLOWED"
        )


class TestReadUpdateDelete:
    async def test_list_is_newest_first_and_paginated(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        made = [(await create(client, tenant, schedule()))["id"] for _ in range(5)]
        await create(client, other_tenant, schedule())
        seen: list[str] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            response = await client.get("/v1/automations", headers=tenant.secret, params=params)
            assert response.status_code == 200, response.text
            seen += [a["id"] for a in response.json()["data"]]
            cursor = response.json()["nextCursor"]
            if cursor is None:
                break
        assert seen == made[::-1]
        response = await client.get("/v1/automations", headers=tenant.secret, params={"cursor": "nonsense"})
        assert_error(response, 400, "BAD_REQUEST", operation_id="automations.list", reason="INVALID_CURSOR")

    async def test_other_organizations_see_nothing(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        automation_id = (await create(client, tenant, schedule()))["id"]
        for method, path, operation in [
            ("GET", "", "automations.get"),
            ("PATCH", "", "automations.update"),
            ("DELETE", "", "automations.delete"),
            ("POST", "/trigger", "automations.trigger"),
        ]:
            response = await client.request(
                method,
                f"/v1/automations/{automation_id}{path}",
                headers=other_tenant.secret,
                json={"name": "x"} if method == "PATCH" else None,
            )
            assert_error(response, 404, "NOT_FOUND", operation_id=operation)
        assert (await get(client, tenant, automation_id))["name"] == "hourly digest"

    async def test_update_replaces_what_is_sent(
        self, client: httpx.AsyncClient, tenant: Tenant, clock: Any
    ) -> None:
        created = await create(client, tenant, schedule("0 * * * *"))
        clock.advance(60)
        response = await client.patch(
            f"/v1/automations/{created['id']}", headers=tenant.secret, json={"name": "renamed"}
        )
        assert response.status_code == 200, response.text
        renamed = response.json()
        assert renamed["name"] == "renamed"
        assert renamed["trigger"] == created["trigger"] and renamed["nextRunAt"] == created["nextRunAt"]
        assert renamed["updatedAt"] == "2026-11-21T10:00:30.000Z"
        response = await client.patch(
            f"/v1/automations/{created['id']}",
            headers=tenant.secret,
            json={"trigger": {"type": "schedule", "cron": "30 12 * * *", "timezone": "Europe/Berlin"}},
        )
        assert response.json()["nextRunAt"] == "2026-11-21T11:30:00.000Z"
        response = await client.patch(
            f"/v1/automations/{created['id']}", headers=tenant.secret, json={"enabled": False}
        )
        assert response.json()["enabled"] is False and response.json()["nextRunAt"] is None
        response = await client.patch(
            f"/v1/automations/{created['id']}", headers=tenant.secret, json={"trigger": {"type": "log"}}
        )
        assert response.json()["trigger"]["type"] == "log" and response.json()["nextRunAt"] is None
        assert await get(client, tenant, created["id"]) == response.json()

    @pytest.mark.parametrize(
        "body",
        [
            {"name": None},
            {"enabled": None},
            {"trigger": {"type": "schedule", "cron": "bad"}},
            {"action": {"threadId": "thr_x"}},
            {"unknown": 1},
        ],
    )
    async def test_update_validation(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]
    ) -> None:
        created = await create(client, tenant, schedule())
        response = await client.patch(f"/v1/automations/{created['id']}", headers=tenant.secret, json=body)
        assert_error(
            response, 400, "BAD_REQUEST", operation_id="automations.update", reason="VALIDATION_FAILED",
            missing=["action.prompt"] if "action" in body else [],
        )  # fmt: skip
        assert await get(client, tenant, created["id"]) == created

    async def test_delete_answers_the_deleted_automation(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        created = await create(client, tenant, schedule())
        response = await client.delete(f"/v1/automations/{created['id']}", headers=tenant.secret)
        assert response.status_code == 200 and response.json() == created
        response = await client.get(f"/v1/automations/{created['id']}", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="automations.get")


class TestTrigger:
    async def test_trigger_starts_a_run_on_a_new_thread(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        created = await create(client, tenant, {**schedule(), "enabled": False})
        response = await client.post(f"/v1/automations/{created['id']}/trigger", headers=tenant.secret)
        assert response.status_code == 201, response.text
        run = response.json()
        assert run["automationId"] == created["id"] and run["status"] == "queued"
        assert run["metadata"] == {"trigger": "manual"}
        thread = (await client.get(f"/v1/threads/{run['threadId']}", headers=tenant.secret)).json()
        assert thread["title"] == "hourly digest"
        assert thread["metadata"] == {"automationId": created["id"]}
        messages = (await client.get(f"/v1/threads/{run['threadId']}/messages", headers=tenant.secret)).json()
        assert next(m["content"] for m in messages["data"]) == "Summarise."
        after = await get(client, tenant, created["id"])
        assert after["lastTriggeredAt"] == "2026-11-21T09:59:30.000Z"
        assert after["updatedAt"] == created["updatedAt"]  # a firing is not an edit
        assert (await wait_for_status(client, tenant, run["id"], "completed"))["status"] == "completed"

    async def test_trigger_on_a_configured_thread_queues_behind_its_run(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        created = await create(client, tenant, schedule(threadId=thread, model="offline/scripted"))
        first = (await client.post(f"/v1/automations/{created['id']}/trigger", headers=tenant.secret)).json()
        second = (await client.post(f"/v1/automations/{created['id']}/trigger", headers=tenant.secret)).json()
        assert first["threadId"] == second["threadId"] == thread
        await wait_for_status(client, tenant, second["id"], "completed")
        assert (await wait_for_status(client, tenant, first["id"], "completed"))["status"] == "completed"

    async def test_deleted_thread_is_a_conflict(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        created = await create(client, tenant, schedule(threadId=thread))
        await client.delete(f"/v1/threads/{thread}", headers=tenant.secret)
        response = await client.post(f"/v1/automations/{created['id']}/trigger", headers=tenant.secret)
        assert_error(response, 409, "CONFLICT", operation_id="automations.trigger", reason="THREAD_NOT_FOUND")
