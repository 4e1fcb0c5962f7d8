"""DESIGN.md's error table as far as the foundation touches it: one envelope for every non-2xx."""

from __future__ import annotations

import ast
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from tests.support import Tenant, assert_error
from threadline.app import create_app
from threadline.config import Settings
from threadline.kit.errors import ApiError, Reason
from threadline.projects.tables import projects
from threadline.runtime import Services


async def project_count(services: Services, org_id: str) -> int:
    async with services.db.transaction(write=False) as conn:
        query = sa.select(sa.func.count()).select_from(projects).where(projects.c.organization_id == org_id)
        return int((await conn.execute(query)).scalar_one())


class TestRouting:
    async def test_unknown_route_is_404_unknown(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/nothing-here", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="unknown")
        assert response.headers["x-ratelimit-limit"] == "1000"

    async def test_unknown_versioned_route_is_404(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        assert_error(
            await client.get("/v1/nope", headers=tenant.secret), 404, "NOT_FOUND", operation_id="unknown"
        )

    async def test_unversioned_paths_are_the_dashboards(self, client: httpx.AsyncClient) -> None:
        """Outside /v1, /docs and the probes every path is the web dashboard's: its 404 is a page."""
        response = await client.get("/nope")
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("text/html")
        assert "Not found" in response.text

    async def test_wrong_method_is_405_with_allow(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.put("/v1/me", headers=tenant.secret)
        assert_error(response, 405, "METHOD_NOT_ALLOWED", operation_id="unknown")
        assert response.headers["allow"] == "GET"

    @pytest.mark.parametrize(
        ("path", "allowed"),
        [("/v1/threads", "GET, POST"), ("/v1/threads/thr_unknown", "DELETE, GET, PATCH")],
    )
    async def test_allow_names_every_method_of_the_path(
        self, client: httpx.AsyncClient, tenant: Tenant, path: str, allowed: str
    ) -> None:
        # Each method is a route of its own: the header must not stop at the first route whose path matched.
        response = await client.put(path, headers=tenant.secret)
        assert_error(response, 405, "METHOD_NOT_ALLOWED", operation_id="unknown")
        assert response.headers["allow"] == allowed

    async def test_every_response_has_a_request_id(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        ids = set()
        for path in ("/healthz", "/readyz", "/v1/me", "/v1/nothing", "/docs"):
            response = await client.get(path, headers=tenant.secret)
            ids.add(response.headers["x-request-id"])
        assert len(ids) == 5

    async def test_a_sane_incoming_request_id_is_kept(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        response = await client.get("/v1/me", headers={**tenant.secret, "X-Request-Id": "lb-7f3a.42"})
        assert response.headers["x-request-id"] == "lb-7f3a.42"
        hostile = await client.get("/v1/me", headers={**tenant.secret, "X-Request-Id": "a b<script>"})
        assert hostile.headers["x-request-id"].startswith("req_")


class TestBadInput:
    async def test_malformed_json_is_400_and_writes_nothing(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        before = await project_count(services, tenant.org_id)
        response = await client.post(
            "/v1/projects",
            headers={**tenant.secret, "content-type": "application/json"},
            content=b'{"name": ',
        )
        assert_error(response, 400, "BAD_REQUEST", operation_id="projects.create", reason="INVALID_JSON")
        assert await project_count(services, tenant.org_id) == before

    async def test_missing_field_names_it(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/keys", headers=tenant.secret, json={"type": "secret"})
        body = assert_error(
            response,
            400,
            "BAD_REQUEST",
            operation_id="keys.create",
            reason="VALIDATION_FAILED",
            missing=["name"],
        )
        assert "name" in str(body["message"])

    async def test_wrong_type_is_400_never_422(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/projects", headers=tenant.secret, json={"name": 12})
        body = assert_error(
            response, 400, "BAD_REQUEST", operation_id="projects.create", reason="VALIDATION_FAILED"
        )
        assert "name" in str(body["message"])

    async def test_unknown_field_is_400(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        before = await project_count(services, tenant.org_id)
        response = await client.post(
            "/v1/projects", headers=tenant.secret, json={"name": "x", "color": "red"}
        )
        body = assert_error(
            response, 400, "BAD_REQUEST", operation_id="projects.create", reason="VALIDATION_FAILED"
        )
        assert "color: unknown field" in str(body["message"])
        assert await project_count(services, tenant.org_id) == before

    async def test_body_that_is_not_an_object_is_400(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/projects", headers=tenant.secret, json=["name"])
        assert_error(response, 400, "BAD_REQUEST", operation_id="projects.create", reason="VALIDATION_FAILED")

    async def test_bad_query_parameter_is_400(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/projects?limit=1000", headers=tenant.secret)
        body = assert_error(
            response, 400, "BAD_REQUEST", operation_id="projects.list", reason="VALIDATION_FAILED"
        )
        assert "limit" in str(body["message"])

    async def test_oversized_body_with_length_is_413(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        before = await project_count(services, tenant.org_id)
        big = json.dumps({"name": "x" * (2 * 1024 * 1024)})
        response = await client.post(
            "/v1/projects", headers={**tenant.secret, "content-type": "application/json"}, content=big
        )
        assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="projects.create")
        assert await project_count(services, tenant.org_id) == before

    async def test_non_numeric_content_length_is_400(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/projects", headers={**tenant.secret, "content-length": "ten"})
        assert_error(response, 400, "BAD_REQUEST", operation_id="projects.create")

    async def test_oversized_streamed_body_is_413(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"name": "'
            for _ in range(40):
                yield b"x" * 65536
            yield b'"}'

        before = await project_count(services, tenant.org_id)
        response = await client.post(
            "/v1/projects", headers={**tenant.secret, "content-type": "application/json"}, content=chunks()
        )
        assert_error(response, 413, "PAYLOAD_TOO_LARGE", operation_id="projects.create")
        assert await project_count(services, tenant.org_id) == before


class TestUnexpected:
    @pytest.fixture
    async def failing(self, settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
        app = create_app(settings, chores=False)

        @app.get("/v1/explode", operation_id="tests.explode")
        async def explode() -> None:
            raise RuntimeError("database password is hunter2")

        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                yield app, http

    async def test_500_envelope_has_no_internals(
        self, failing: tuple[FastAPI, httpx.AsyncClient], services: Services
    ) -> None:
        app, http = failing
        tenant_key = (await _tenant(app)).secret
        response = await http.get("/v1/explode", headers=tenant_key)
        assert_error(response, 500, "INTERNAL_SERVER_ERROR", operation_id="tests.explode")
        assert "hunter2" not in response.text and "RuntimeError" not in response.text
        assert response.headers["x-ratelimit-remaining"].isdigit()


SOURCE = Path(__file__).resolve().parents[2] / "threadline"
CONTRACT = SOURCE.parent / "openapi.json"


def _subclasses(cls: type[ApiError]) -> set[str]:
    return {cls.__name__}.union(*(_subclasses(sub) for sub in cls.__subclasses__()))


class TestReasons:
    """``reason`` is one enumeration: what is raised, what is on the wire and what the contract lists."""

    def test_each_reason_is_its_name_on_the_wire(self) -> None:
        assert [reason.value for reason in Reason] == [reason.name for reason in Reason]
        assert json.dumps({"reason": Reason.RUN_ACTIVE}) == '{"reason": "RUN_ACTIVE"}'

    def test_the_contract_lists_every_reason_on_every_error_response(self) -> None:
        contract = json.loads(CONTRACT.read_text())
        schemas = contract["components"]["schemas"]
        assert schemas["Reason"]["enum"] == [reason.value for reason in Reason]
        bodies = set()
        for item in contract["paths"].values():
            for operation in item.values():
                for status, response in operation["responses"].items():
                    if int(status) >= 400:
                        ref = response["content"]["application/json"]["schema"]["$ref"]
                        bodies.add(ref.rsplit("/", 1)[-1])
        assert bodies == {"ErrorBody", "RateLimitedBody"}
        for body in bodies:
            assert {"$ref": "#/components/schemas/Reason"} in schemas[body]["properties"]["reason"]["anyOf"]

    def test_every_raise_site_names_a_member(self) -> None:
        """``mypy`` refuses a bare string where ``ApiError`` takes a ``Reason``; this also catches one
        written anywhere else, and a reason spelled out as a string outside the enumeration."""
        errors = _subclasses(ApiError)
        values = {reason.value for reason in Reason}
        named = 0
        for path in SOURCE.rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and node.value in values:
                    assert path.name == "errors.py" and path.parent.name == "kit", (path, node.lineno)
                if not isinstance(node, ast.Call):
                    continue
                callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                for keyword in node.keywords:
                    if keyword.arg != "reason" or callee not in errors:
                        continue
                    value, where = keyword.value, (path, node.lineno)
                    assert isinstance(value, ast.Attribute), where
                    assert isinstance(value.value, ast.Name), where
                    assert value.value.id == "Reason", where
                    assert value.attr in Reason.__members__, where
                    named += 1
        assert named >= 40  # the raise sites were found at all


async def _tenant(app: FastAPI) -> Tenant:
    from tests.support import make_tenant

    return await make_tenant(app.state.runtime.services, "boom")
