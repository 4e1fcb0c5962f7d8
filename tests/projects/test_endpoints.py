"""Projects, one class per operation."""

from __future__ import annotations

import httpx

from tests.support import Tenant, assert_error


class TestCreate:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.post("/v1/projects", json={"name": "web"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="projects.create", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/projects", headers=tenant.public, json={"name": "web"})
        assert_error(
            response, 403, "FORBIDDEN", operation_id="projects.create", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_bad_input(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for body in ({}, {"name": "   "}, {"name": "x" * 201}, {"name": None}):
            response = await client.post("/v1/projects", headers=tenant.secret, json=body)
            assert_error(
                response,
                400,
                "BAD_REQUEST",
                operation_id="projects.create",
                reason="VALIDATION_FAILED",
                missing=["name"] if body == {} else [],
            )

    async def test_success(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/projects", headers=tenant.secret, json={"name": "  checkout  "})
        assert response.status_code == 201
        body = response.json()
        assert set(body) == {"id", "name", "createdAt"}
        assert body["id"].startswith("proj_") and body["name"] == "checkout"
        fetched = await client.get(f"/v1/projects/{body['id']}", headers=tenant.secret)
        assert fetched.json() == body


class TestList:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/projects")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="projects.list", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/projects", headers=tenant.public)
        assert_error(
            response, 403, "FORBIDDEN", operation_id="projects.list", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_only_own_projects(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        response = await client.get("/v1/projects", headers=tenant.secret)
        assert response.status_code == 200
        assert [p["id"] for p in response.json()["data"]] == [tenant.project_id]

    async def test_malformed_cursor_is_400(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for cursor in ("garbage", "YzE6b3JnX3g", "Zm9v", "====", "c1:proj_01"):
            response = await client.get("/v1/projects", headers=tenant.secret, params={"cursor": cursor})
            assert_error(response, 400, "BAD_REQUEST", operation_id="projects.list", reason="INVALID_CURSOR")


class TestGet:
    async def test_requires_a_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(f"/v1/projects/{tenant.project_id}")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="projects.get", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(f"/v1/projects/{tenant.project_id}", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="projects.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_another_organizations_project_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        response = await client.get(f"/v1/projects/{other_tenant.project_id}", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="projects.get")

    async def test_success(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get(f"/v1/projects/{tenant.project_id}", headers=tenant.secret)
        assert response.status_code == 200
        assert response.json()["name"] == "default"
