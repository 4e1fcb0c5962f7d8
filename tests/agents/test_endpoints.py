"""/v1/agents: create, read, page, update as new versions, delete, each scoped to the organization, and
the bodies refused the way a run's are."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.agents.helpers import SCHEMA, create_agent, update_agent
from tests.support import Tenant, assert_error

FIELDS = {
    "id", "version", "name", "model", "instructions", "tools", "responseFormat", "actionTimeoutSeconds",
    "metadata", "createdAt", "updatedAt",
}  # fmt: skip
FUNCTION = {"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}


class TestCreate:
    async def test_defaults(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await create_agent(client, tenant)
        assert set(created) == FIELDS
        assert created["id"].startswith("agt_") and created["version"] == 1
        assert created["name"] == "support triage"
        assert (created["model"], created["instructions"], created["tools"]) == (None, None, None)
        assert (created["responseFormat"], created["actionTimeoutSeconds"]) == (None, None)
        assert created["metadata"] == {} and created["createdAt"] == created["updatedAt"]
        response = await client.get(f"/v1/agents/{created['id']}", headers=tenant.secret)
        assert response.json() == created

    async def test_every_field_kept_as_given(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await create_agent(
            client,
            tenant,
            model="offline/scripted",
            instructions="Triage the ticket.",
            tools=[{"type": "builtin", "name": "search_messages"}, FUNCTION],
            responseFormat={"type": "json_schema", "name": "triage", "schema": SCHEMA},
            actionTimeoutSeconds=120,
            metadata={"team": "support"},
        )
        assert created["model"] == "offline/scripted"
        assert created["instructions"] == "Triage the ticket."
        assert created["tools"] == [
            {"type": "builtin", "name": "search_messages", "requireApproval": False},
            {"type": "function", "name": "lookup_order", "description": "", "parameters": {"type": "object"}},
        ]
        assert created["responseFormat"] == {
            "type": "json_schema", "name": "triage", "schema": SCHEMA, "strict": True,
        }  # fmt: skip
        assert (created["actionTimeoutSeconds"], created["metadata"]) == (120, {"team": "support"})

    @pytest.mark.parametrize(
        "body",
        [
            {},
            {"name": " "},
            {"name": "x", "model": "gpt-4"},
            {"name": "x", "model": "offline/other"},
            {"name": "x", "tools": [{"type": "builtin", "name": "rm_rf"}]},
            {"name": "x", "tools": [{"type": "function", "name": "bad name"}]},
            {"name": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": 5}}]},
            {"name": "x", "responseFormat": {"type": "xml"}},
            {"name": "x", "responseFormat": {"type": "json_schema", "name": "t", "schema": {"type": "nope"}}},
            {"name": "x", "responseFormat": {"type": "json_schema", "schema": {}}},
            {"name": "x", "actionTimeoutSeconds": 0},
            {"name": "x", "actionTimeoutSeconds": 86_401},
            {"name": "x", "metadata": {"k": 1}},
            {"name": "x", "unknown": 1},
        ],
    )
    async def test_bad_bodies(self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]) -> None:
        response = await client.post("/v1/agents", headers=tenant.secret, json=body)
        assert response.status_code == 400, response.text
        assert (response.json()["code"], response.json()["operationId"]) == ("BAD_REQUEST", "agents.create")

    async def test_tools_checked_as_runs_check_them(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        twice = await client.post(
            "/v1/agents", headers=tenant.secret, json={"name": "x", "tools": [FUNCTION, FUNCTION]}
        )
        assert_error(twice, 400, "BAD_REQUEST", operation_id="agents.create", reason="TOOL_NAME_CONFLICT")
        server = await client.post(
            "/v1/mcp-servers", headers=other_tenant.secret, json={"name": "s", "url": "https://8.8.8.8/mcp"}
        )
        entry = {"type": "mcp", "serverId": server.json()["id"]}
        foreign = await client.post("/v1/agents", headers=tenant.secret, json={"name": "x", "tools": [entry]})
        assert_error(foreign, 404, "NOT_FOUND", operation_id="agents.create")

    async def test_needs_a_secret_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        assert_error(
            await client.post("/v1/agents", json={"name": "x"}),
            401, "UNAUTHORIZED", operation_id="agents.create", missing=["Authorization"],
        )  # fmt: skip
        assert_error(
            await client.post("/v1/agents", headers=tenant.public, json={"name": "x"}),
            403, "FORBIDDEN", operation_id="agents.create", reason="PUBLIC_KEY_NOT_ALLOWED",
        )  # fmt: skip


class TestVersions:
    async def test_every_update_is_a_new_version_and_the_old_ones_stay(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        created = await create_agent(client, tenant, model="offline/scripted", instructions="v1")
        second = await update_agent(client, tenant, created["id"], instructions="v2", metadata={"a": "b"})
        assert second["version"] == 2 and second["instructions"] == "v2"
        assert (second["model"], second["name"], second["metadata"]) == (
            "offline/scripted",
            created["name"],
            {"a": "b"},
        )
        assert second["createdAt"] == created["createdAt"]
        third = await update_agent(client, tenant, created["id"], model=None)
        assert third["version"] == 3 and third["model"] is None and third["instructions"] == "v2"
        empty = await update_agent(client, tenant, created["id"])
        assert empty["version"] == 4
        got = (await client.get(f"/v1/agents/{created['id']}", headers=tenant.secret)).json()
        assert got == empty
        page = (await client.get(f"/v1/agents/{created['id']}/versions", headers=tenant.secret)).json()
        assert [v["version"] for v in page["data"]] == [4, 3, 2, 1]
        assert page["data"][3] == created and page["data"][2] == second and page["data"][1] == third
        first_two = await client.get(f"/v1/agents/{created['id']}/versions?limit=2", headers=tenant.secret)
        rest = await client.get(
            f"/v1/agents/{created['id']}/versions?limit=2&cursor={first_two.json()['nextCursor']}",
            headers=tenant.secret,
        )
        assert [v["version"] for v in rest.json()["data"]] == [2, 1] and rest.json()["nextCursor"] is None

    @pytest.mark.parametrize(
        "body",
        [{"name": None}, {"metadata": None}, {"model": "nope"}, {"tools": [FUNCTION, FUNCTION]}, {"x": 1}],
    )
    async def test_bad_updates_make_no_version(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]
    ) -> None:
        created = await create_agent(client, tenant)
        response = await client.patch(f"/v1/agents/{created['id']}", headers=tenant.secret, json=body)
        assert response.status_code == 400, response.text
        assert response.json()["operationId"] == "agents.update"
        page = (await client.get(f"/v1/agents/{created['id']}/versions", headers=tenant.secret)).json()
        assert [v["version"] for v in page["data"]] == [1]


class TestReadDelete:
    async def test_pages_newest_first_and_scoped(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        ids = [(await create_agent(client, tenant, name=f"a{i}"))["id"] for i in range(3)]
        await create_agent(client, other_tenant)
        await update_agent(client, tenant, ids[0], name="renamed")
        first = (await client.get("/v1/agents?limit=2", headers=tenant.secret)).json()
        assert [a["id"] for a in first["data"]] == ids[::-1][:2]
        rest = (
            await client.get(f"/v1/agents?limit=2&cursor={first['nextCursor']}", headers=tenant.secret)
        ).json()
        assert [(a["id"], a["name"], a["version"]) for a in rest["data"]] == [(ids[0], "renamed", 2)]
        assert rest["nextCursor"] is None
        bad = await client.get("/v1/agents?cursor=nonsense", headers=tenant.secret)
        assert_error(bad, 400, "BAD_REQUEST", operation_id="agents.list", reason="INVALID_CURSOR")

    async def test_other_organization_sees_nothing(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        agent_id = (await create_agent(client, tenant))["id"]
        for method, path, operation in [
            ("GET", "", "agents.get"),
            ("PATCH", "", "agents.update"),
            ("DELETE", "", "agents.delete"),
            ("GET", "/versions", "agents.listVersions"),
        ]:
            response = await client.request(
                method, f"/v1/agents/{agent_id}{path}", headers=other_tenant.secret,
                json={"name": "mine"} if method == "PATCH" else None,
            )  # fmt: skip
            assert_error(response, 404, "NOT_FOUND", operation_id=operation)
            missing = await client.request(
                method, f"/v1/agents/agt_01jqaaaaaaaaaaaaaaaaaaaaaa{path}", headers=other_tenant.secret,
                json={"name": "mine"} if method == "PATCH" else None,
            )  # fmt: skip
            assert (
                missing.json()["message"].replace("agt_01jqaaaaaaaaaaaaaaaaaaaaaa", agent_id)
                == (response.json()["message"])
            )
        got = (await client.get(f"/v1/agents/{agent_id}", headers=tenant.secret)).json()
        assert (got["name"], got["version"]) == ("support triage", 1)

    async def test_delete_answers_the_agent_then_it_is_gone(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        created = await create_agent(client, tenant)
        await update_agent(client, tenant, created["id"], name="v2")
        deleted = await client.delete(f"/v1/agents/{created['id']}", headers=tenant.secret)
        assert deleted.status_code == 200 and deleted.json()["version"] == 2
        for path in ("", "/versions"):
            gone = await client.get(f"/v1/agents/{created['id']}{path}", headers=tenant.secret)
            assert gone.status_code == 404
