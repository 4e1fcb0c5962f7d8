"""``/settings`` and ``/projects``: the API's rules, with each problem at its field, and nothing of another
organization."""

from __future__ import annotations

import re

import httpx

from tests.dashboard.support import Dashboard
from tests.support import Tenant

FORM = {
    "default_model": "offline/scripted",
    "instructions": "Be brief.",
    "log_retention_days": "14",
    "allowed_origins": "https://app.example.com\r\nhttp://localhost:3000\r\n",
    "billing_enforced": "true",
}


def field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="field-error" id="{field}-error">([^<]+)</p>', html)
    assert found is not None, f"no error at {field}"
    return found.group(1)


class TestSettings:
    async def test_shows_the_effective_settings(self, dashboard: Dashboard) -> None:
        page = await dashboard.get("/settings")
        assert page.status_code == 200
        assert 'name="default_model" value="offline/scripted"' in page.text
        assert 'name="log_retention_days" value="30"' in page.text and ">*</textarea>" in page.text
        assert "1000 requests per minute" in page.text and "threadline orgs set-limit" in page.text
        assert 'name="rate_limit' not in page.text  # read-only: no field at all

    async def test_saves_what_the_api_then_reads(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        response = await dashboard.post("/settings", FORM)
        assert response.status_code == 303 and response.headers["location"] == "/settings?saved=true"
        assert "Settings saved." in (await dashboard.get(response.headers["location"])).text
        body = (await client.get("/v1/settings", headers=tenant.secret)).json()
        assert body["instructions"] == "Be brief." and body["logRetentionDays"] == 14
        assert body["allowedOrigins"] == ["https://app.example.com", "http://localhost:3000"]
        assert body["billingEnforced"] is True
        cleared = {**FORM, "instructions": ""}
        del cleared["billing_enforced"]  # an unticked box is not sent
        assert (await dashboard.post("/settings", cleared)).status_code == 303
        body = (await client.get("/v1/settings", headers=tenant.secret)).json()
        assert body["instructions"] is None and body["billingEnforced"] is False

    async def test_problems_at_their_fields_and_nothing_saved(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        cases = [
            ("default_model", "gpt-9", "Unknown model 'gpt-9': use offline/scripted or openai/<model>."),
            ("log_retention_days", "soon", "Enter a whole number of days."),
            ("log_retention_days", "0", "Input should be greater than or equal to 1."),
            ("log_retention_days", "3651", "Input should be less than or equal to 3650."),
            ("allowed_origins", "https://a.test/path", "'https://a.test/path' is not an origin"),
            ("allowed_origins", "", "1 to 50 origins"),
            ("instructions", "x" * 32_769, "at most 32768 characters"),
        ]
        for field, value, words in cases:
            response = await dashboard.post("/settings", {**FORM, field: value})
            assert response.status_code == 400, (field, value)
            assert words.replace("'", "&#39;").replace("<", "&lt;").replace(">", "&gt;") in field_error(
                response.text, field
            ), (field, value)
            assert 'aria-invalid="true"' in response.text and "Nothing was saved" in response.text
        body = (await client.get("/v1/settings", headers=tenant.secret)).json()
        assert body["logRetentionDays"] == 30 and body["instructions"] is None

    async def test_text_is_shown_as_text(self, dashboard: Dashboard) -> None:
        assert (
            await dashboard.post("/settings", {**FORM, "instructions": "<script>x()</script>"})
        ).status_code == 303
        html = (await dashboard.get("/settings")).text
        assert "&lt;script&gt;x()&lt;/script&gt;</textarea>" in html and "<script>x()" not in html

    async def test_without_the_csrf_token_nothing_is_saved(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        assert (await dashboard.http.post("/settings", data=FORM)).status_code == 403
        assert (await client.get("/v1/settings", headers=tenant.secret)).json()["logRetentionDays"] == 30

    async def test_each_organization_sees_its_own(
        self, dashboard: Dashboard, client: httpx.AsyncClient, other_tenant: Tenant
    ) -> None:
        assert (await dashboard.post("/settings", FORM)).status_code == 303
        other = (await client.get("/v1/settings", headers=other_tenant.secret)).json()
        assert other["logRetentionDays"] == 30 and other["billingEnforced"] is False


class TestProjects:
    async def test_lists_and_makes_projects(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        page = await dashboard.get("/projects")
        assert page.status_code == 200 and tenant.project_id in page.text and ">default</th>" in page.text
        response = await dashboard.post("/projects", {"name": "  mobile app  "})
        assert response.status_code == 303 and response.headers["location"].startswith(
            "/projects?created=proj_"
        )
        shown = (await dashboard.get(response.headers["location"])).text
        assert "Project “mobile app” created." in shown and ">mobile app</th>" in shown
        listed = (await client.get("/v1/projects", headers=tenant.secret)).json()["data"]
        assert [p["name"] for p in listed] == ["mobile app", "default"]

    async def test_pages_by_cursor(self, dashboard: Dashboard) -> None:
        for n in range(21):
            assert (await dashboard.post("/projects", {"name": f"p{n:02d}"})).status_code == 303
        first = (await dashboard.get("/projects")).text
        assert first.count('<th scope="row">') == 20 and "p20" in first and ">default</th>" not in first
        older = re.search(r'href="(/projects\?cursor=[^"]+)">Older projects', first)
        assert older is not None
        second = (await dashboard.get(older.group(1))).text
        assert second.count('<th scope="row">') == 2 and ">default</th>" in second and "p00" in second

    async def test_name_problems_at_the_field(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        for name, words in (("   ", "at least 1 character"), ("x" * 201, "at most 200 characters")):
            response = await dashboard.post("/projects", {"name": name})
            assert response.status_code == 400 and words in field_error(response.text, "project-name")
        assert len((await client.get("/v1/projects", headers=tenant.secret)).json()["data"]) == 1

    async def test_names_are_text_and_the_notice_is_only_for_our_projects(
        self, dashboard: Dashboard, other_tenant: Tenant
    ) -> None:
        made = await dashboard.post("/projects", {"name": "<b>bold</b>"})
        html = (await dashboard.get(made.headers["location"])).text
        assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold" not in html
        foreign = (await dashboard.get(f"/projects?created={other_tenant.project_id}")).text
        assert "created." not in foreign and other_tenant.project_id not in foreign

    async def test_without_the_csrf_token_nothing_is_made(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        assert (await dashboard.http.post("/projects", data={"name": "forged"})).status_code == 403
        assert len((await client.get("/v1/projects", headers=tenant.secret)).json()["data"]) == 1
