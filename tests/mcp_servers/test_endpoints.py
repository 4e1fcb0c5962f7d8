"""/v1/mcp-servers: registration under the egress rules, write-only headers, pages, and the live tool list
asked of a real MCP server (the Python SDK's, on 127.0.0.1)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.mcp_servers.helpers import register, tools_of
from tests.mcp_servers.peers import PythonPeer
from tests.support import Tenant, assert_error

FIELDS = {"id", "name", "url", "transport", "headerNames", "timeoutSeconds", "createdAt", "updatedAt"}


class TestCreate:
    async def test_defaults_and_write_only_headers(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await register(
            client, tenant, url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer abc-123"}
        )
        assert set(created) == FIELDS
        assert created["id"].startswith("mcp_")
        assert created["transport"] == "streamable_http"
        assert created["timeoutSeconds"] == 30
        assert created["headerNames"] == ["Authorization"]
        assert created["createdAt"] == created["updatedAt"]
        response = await client.get(f"/v1/mcp-servers/{created['id']}", headers=tenant.secret)
        assert response.json() == created
        assert "abc-123" not in response.text

    async def test_public_address_is_accepted_without_connecting(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        created = await register(client, tenant, url="https://8.8.8.8/mcp", transport="sse", timeoutSeconds=5)
        assert (created["transport"], created["timeoutSeconds"]) == ("sse", 5)

    @pytest.mark.parametrize(
        "url", ["http://10.0.0.1/mcp", "http://169.254.169.254/", "http://[::1]:8080/", "http://192.168.0.1/"]
    )
    async def test_non_public_address_refused(
        self, client: httpx.AsyncClient, tenant: Tenant, url: str
    ) -> None:
        response = await client.post("/v1/mcp-servers", headers=tenant.secret, json={"name": "x", "url": url})
        assert_error(
            response, 400, "BAD_REQUEST", operation_id="mcpServers.create", reason="EGRESS_NOT_ALLOWED",
            missing=["url"],
        )  # fmt: skip

    @pytest.mark.parametrize(
        "body",
        [
            {"url": "http://127.0.0.1/"},
            {"name": "x"},
            {"name": "x", "url": "ftp://127.0.0.1/"},
            {"name": "x", "url": "http://127.0.0.1/", "transport": "stdio"},
            {"name": "x", "url": "http://127.0.0.1/", "timeoutSeconds": 0},
            {"name": "x", "url": "http://127.0.0.1/", "timeoutSeconds": 601},
            {"name": "x", "url": "http://127.0.0.1/", "headers": {"Host": "evil"}},
            {"name": "x", "url": "http://127.0.0.1/", "headers": {"Bad Name": "v"}},
            {"name": "x", "url": "http://127.0.0.1/", "headers": {"X-A": "line\r\nX-B: injected"}},
            {"name": "x", "url": "http://127.0.0.1/", "headers": {"X-A": "1", "x-a": "2"}},
            {"name": "x", "url": "http://127.0.0.1/", "headers": {f"X-{i}": "v" for i in range(33)}},
            {"name": "x", "url": "http://127.0.0.1/", "unknown": 1},
        ],
    )
    async def test_bad_bodies(self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]) -> None:
        response = await client.post("/v1/mcp-servers", headers=tenant.secret, json=body)
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "BAD_REQUEST"

    async def test_needs_a_secret_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        body = {"name": "x", "url": "http://127.0.0.1/"}
        assert_error(
            await client.post("/v1/mcp-servers", json=body),
            401, "UNAUTHORIZED", operation_id="mcpServers.create", missing=["Authorization"],
        )  # fmt: skip
        assert_error(
            await client.post("/v1/mcp-servers", headers=tenant.public, json=body),
            403, "FORBIDDEN", operation_id="mcpServers.create", reason="PUBLIC_KEY_NOT_ALLOWED",
        )  # fmt: skip


class TestReadUpdateDelete:
    async def test_pages_newest_first_and_scoped(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        ids = [
            (await register(client, tenant, name=f"s{i}", url="http://127.0.0.1/"))["id"] for i in range(3)
        ]
        await register(client, other_tenant, url="http://127.0.0.1/")
        first = (await client.get("/v1/mcp-servers?limit=2", headers=tenant.secret)).json()
        assert [s["id"] for s in first["data"]] == ids[::-1][:2]
        rest = await client.get(
            f"/v1/mcp-servers?limit=2&cursor={first['nextCursor']}", headers=tenant.secret
        )
        assert [s["id"] for s in rest.json()["data"]] == ids[:1] and rest.json()["nextCursor"] is None
        bad = await client.get("/v1/mcp-servers?cursor=nonsense", headers=tenant.secret)
        assert_error(bad, 400, "BAD_REQUEST", operation_id="mcpServers.list", reason="INVALID_CURSOR")

    async def test_other_organization_sees_nothing(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        server_id = (await register(client, tenant, url="http://127.0.0.1/"))["id"]
        for method, path, operation in [
            ("GET", "", "mcpServers.get"),
            ("PATCH", "", "mcpServers.update"),
            ("DELETE", "", "mcpServers.delete"),
            ("GET", "/tools", "mcpServers.listTools"),
        ]:
            response = await client.request(
                method, f"/v1/mcp-servers/{server_id}{path}", headers=other_tenant.secret,
                json={"name": "mine"} if method == "PATCH" else None,
            )  # fmt: skip
            assert_error(response, 404, "NOT_FOUND", operation_id=operation)
        assert (await client.get(f"/v1/mcp-servers/{server_id}", headers=tenant.secret)).json()[
            "name"
        ] == "tools"

    async def test_update_replaces_fields_and_headers(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        created = await register(
            client, tenant, url="http://127.0.0.1/", headers={"X-One": "1", "X-Two": "2"}
        )
        path = f"/v1/mcp-servers/{created['id']}"
        updated = (await client.patch(path, headers=tenant.secret, json={"name": "renamed"})).json()
        assert updated["name"] == "renamed" and updated["headerNames"] == ["X-One", "X-Two"]
        updated = (await client.patch(path, headers=tenant.secret, json={"headers": {"X-Three": "3"}})).json()
        assert updated["headerNames"] == ["X-Three"]
        updated = (
            await client.patch(path, headers=tenant.secret, json={"headers": {}, "timeoutSeconds": 2})
        ).json()
        assert updated["headerNames"] == [] and updated["timeoutSeconds"] == 2
        refused = await client.patch(path, headers=tenant.secret, json={"url": "http://10.0.0.1/"})
        assert_error(
            refused, 400, "BAD_REQUEST", operation_id="mcpServers.update", reason="EGRESS_NOT_ALLOWED",
            missing=["url"],
        )  # fmt: skip
        null = await client.patch(path, headers=tenant.secret, json={"timeoutSeconds": None})
        assert_error(null, 400, "BAD_REQUEST", operation_id="mcpServers.update", reason="VALIDATION_FAILED")

    async def test_delete(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await register(client, tenant, url="http://127.0.0.1/")
        path = f"/v1/mcp-servers/{created['id']}"
        deleted = await client.delete(path, headers=tenant.secret)
        assert deleted.status_code == 200 and deleted.json() == created
        assert_error(
            await client.get(path, headers=tenant.secret), 404, "NOT_FOUND", operation_id="mcpServers.get"
        )


class TestTools:
    @pytest.mark.parametrize(("transport", "path"), [("streamable_http", "/mcp"), ("sse", "/sse")])
    async def test_lists_the_servers_tools_sending_its_headers(
        self, client: httpx.AsyncClient, tenant: Tenant, peer: PythonPeer, transport: str, path: str
    ) -> None:
        created = await register(
            client, tenant, url=peer.base + path, transport=transport, headers={"Authorization": "Bearer t0k"}
        )
        peer.seen_headers.clear()
        response = await tools_of(client, tenant, created["id"])
        assert response.status_code == 200, response.text
        tools = {tool["name"]: tool for tool in response.json()["data"]}
        assert set(tools) == {"echo", "add", "explode", "slow"}
        assert tools["add"]["description"] == "Adds two integers."
        assert tools["add"]["inputSchema"]["properties"].keys() == {"a", "b"}
        assert peer.seen_headers and all(h.get("authorization") == "Bearer t0k" for h in peer.seen_headers)

    async def test_unreachable_server_is_502(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        created = await register(client, tenant, url="http://127.0.0.1:9/mcp", timeoutSeconds=2)
        assert_error(
            await tools_of(client, tenant, created["id"]),
            502, "BAD_GATEWAY", operation_id="mcpServers.listTools", reason="MCP_UNREACHABLE",
        )  # fmt: skip

    async def test_wrong_path_is_502(
        self, client: httpx.AsyncClient, tenant: Tenant, peer: PythonPeer
    ) -> None:
        created = await register(client, tenant, url=peer.base + "/not-mcp", timeoutSeconds=2)
        assert_error(
            await tools_of(client, tenant, created["id"]),
            502, "BAD_GATEWAY", operation_id="mcpServers.listTools", reason="MCP_UNREACHABLE",
        )  # fmt: skip
