"""Settings > API Keys: listing, making keys (a secret one with the password again), showing a value once,
revoking (the API refuses the key at once), and the refusals around them."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.dashboard.support import Dashboard, Member, csrf_in
from tests.support import Tenant
from threadline.dashboard import passwords
from threadline.keys import service as keys
from threadline.keys.tables import api_keys
from threadline.kit.pagination import CursorParams
from threadline.projects.tables import projects
from threadline.runtime import Services

HTMX = {"HX-Request": "true"}
_VALUE = re.compile(r'id="new-key" class="mono" value="((?:pk|sk)_[A-Za-z0-9]{40})"')


def value_in(html: str) -> str:
    found = _VALUE.search(html)
    assert found is not None, "no new key on the page"
    return found.group(1)


async def key_names(services: Services, tenant: Tenant) -> list[str]:
    async with services.db.transaction(write=False) as conn:
        found, _ = await keys.list_keys(conn, tenant.org_id, CursorParams(limit=100, after_id=None), None)
    return [k.name for k in found]


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


class TestListing:
    async def test_every_key_with_its_masked_value_and_project(
        self, dashboard: Dashboard, tenant: Tenant
    ) -> None:
        page = await dashboard.get("/settings/api-keys")
        assert page.status_code == 200
        html = page.text
        created = tenant.created
        assert f"sk_…{created.secret_value[-4:]}" in html and f"pk_…{created.public_value[-4:]}" in html
        assert "default secret key" in html and "default public key" in html
        assert ">default</td>" in html and "all projects" in html  # the public key's project; the secret's
        assert created.secret_value not in html and created.public_value not in html
        assert html.count(">Revoke</button>") == 2 and "never" in html
        assert page.headers["cache-control"] == "no-store"

    async def test_empty_state_explains_both_kinds(
        self, dashboard: Dashboard, services: Services, tenant: Tenant
    ) -> None:
        async with services.db.transaction() as conn:  # an organization with no key and no project yet
            await conn.execute(api_keys.delete().where(api_keys.c.organization_id == tenant.org_id))
            await conn.execute(projects.delete().where(projects.c.organization_id == tenant.org_id))
        html = (await dashboard.get("/settings/api-keys")).text
        assert "No keys yet." in html and "Authorization: Bearer sk_…" in html and "x-service-key" in html
        assert "Safe to ship inside an app." in html and "There is no project yet" in html
        assert "<table>" not in html

    async def test_pages_of_keys_by_cursor(
        self, dashboard: Dashboard, services: Services, tenant: Tenant
    ) -> None:
        async with services.db.transaction() as conn:
            for n in range(25):
                await keys.create_key(
                    conn, tenant.org_id, name=f"batch {n:02d}", key_type="secret", now=services.clock.now()
                )
        first = (await dashboard.get("/settings/api-keys")).text
        assert first.count(">Revoke</button>") == 20 and "batch 24" in first and "batch 04" not in first
        older = re.search(r'href="(/settings/api-keys\?cursor=[^"]+)">Older keys', first)
        assert older is not None
        second = (await dashboard.get(older.group(1).replace("&amp;", "&"))).text
        assert "batch 04" in second and "default public key" in second and "batch 24" not in second
        assert "Older keys" not in second and 'href="/settings/api-keys">Newest keys' in second

    async def test_a_malformed_cursor_is_an_error_page(self, dashboard: Dashboard) -> None:
        response = await dashboard.get("/settings/api-keys?cursor=nonsense")
        assert response.status_code == 400 and "The cursor is malformed" in response.text


class TestCreate:
    async def test_public_key_shown_once_in_the_dialog(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        response = await dashboard.post(
            "/settings/api-keys",
            {"name": "web app", "type": "public", "project": tenant.project_id},
            headers=HTMX,
        )
        assert response.status_code == 200
        html = response.text
        value = value_in(html)
        assert value.startswith("pk_") and "<dialog" in html and "data-open-on-load" in html
        assert '<label for="new-key">New key</label>' in html and 'data-copy="new-key">Copy</button>' in html
        assert "it will not be shown again" in html
        assert (
            'id="key-list" aria-labelledby="key-list-title" hx-swap-oob="true"' in html
        )  # the list, updated
        assert f"pk_…{value[-4:]}" in html and "<html" not in html
        again = await dashboard.get("/settings/api-keys")
        assert value not in again.text and f"pk_…{value[-4:]}" in again.text and "web app" in again.text
        known = await client.get("/v1/me", headers={"x-service-key": value})  # a public key of this org
        assert known.status_code == 403 and known.json()["reason"] == "PUBLIC_KEY_NOT_ALLOWED"

    async def test_without_scripts_the_post_answers_the_whole_page(
        self, dashboard: Dashboard, tenant: Tenant
    ) -> None:
        response = await dashboard.post(
            "/settings/api-keys", {"name": "plain", "type": "public", "project": tenant.project_id}
        )
        assert response.status_code == 200 and "<html" in response.text
        assert value_in(response.text).startswith("pk_") and "hx-swap-oob" not in response.text
        assert response.headers["cache-control"] == "no-store"

    async def test_secret_key_needs_the_password_again(
        self,
        dashboard: Dashboard,
        member: Member,
        client: httpx.AsyncClient,
        services: Services,
        tenant: Tenant,
    ) -> None:
        form = {"name": "server", "type": "secret"}
        for password, message in (
            ("", "Enter your password to confirm."),
            ("wrong", "That is not your password."),
        ):
            refused = await dashboard.post("/settings/api-keys", {**form, "password": password}, headers=HTMX)
            assert refused.status_code == 200 and 'id="new-key"' not in refused.text
            assert f'<p class="field-error" id="key-password-error">{message}</p>' in refused.text
            assert 'aria-invalid="true"' in refused.text and "autofocus" in refused.text
        assert "server" not in await key_names(services, tenant)
        made = await dashboard.post("/settings/api-keys", {**form, "password": member.password}, headers=HTMX)
        value = value_in(made.text)
        assert value.startswith("sk_") and "Authorization: Bearer" in made.text
        assert (await client.get("/v1/me", headers=bearer(value))).status_code == 200

    async def test_a_project_sent_with_a_secret_key_is_ignored(
        self, dashboard: Dashboard, member: Member, services: Services, tenant: Tenant
    ) -> None:
        form = {"name": "srv", "type": "secret", "project": tenant.project_id, "password": member.password}
        assert value_in((await dashboard.post("/settings/api-keys", form, headers=HTMX)).text).startswith(
            "sk_"
        )
        async with services.db.transaction(write=False) as conn:
            found, _ = await keys.list_keys(conn, tenant.org_id, CursorParams(limit=1, after_id=None), None)
        assert found[0].name == "srv" and found[0].project_id is None

    async def test_problems_at_their_fields_and_nothing_made(
        self, dashboard: Dashboard, services: Services, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        before = await key_names(services, tenant)
        cases = [
            (
                {"name": "  ", "type": "public", "project": tenant.project_id},
                "key-name-error",
                "at least 1 character",
            ),
            (
                {"name": "x" * 201, "type": "public", "project": tenant.project_id},
                "key-name-error",
                "at most 200",
            ),
            ({"name": "a", "type": "admin"}, "key-type-error", "public"),
            ({"name": "a", "type": "public"}, "key-project-error", "belongs to one project"),
            (
                {"name": "a", "type": "public", "project": other_tenant.project_id},
                "key-project-error",
                f"Project {other_tenant.project_id} was not found.",
            ),
        ]
        for form, field, words in cases:
            response = await dashboard.post("/settings/api-keys", form)
            assert response.status_code == 400, form
            error = re.search(rf'<p class="field-error" id="{field}">([^<]+)</p>', response.text)
            assert error is not None and words in error.group(1), (form, response.text[-3000:])
            assert 'id="new-key"' not in response.text
        assert await key_names(services, tenant) == before

    async def test_a_name_is_text_not_markup(self, dashboard: Dashboard, tenant: Tenant) -> None:
        name = "<script>alert(1)</script>"
        form = {"name": name, "type": "public", "project": tenant.project_id}
        made = await dashboard.post("/settings/api-keys", form, headers=HTMX)
        listed = await dashboard.get("/settings/api-keys")
        for html in (made.text, listed.text):
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and name not in html

    async def test_without_the_csrf_token_nothing_is_made(
        self, dashboard: Dashboard, services: Services, tenant: Tenant
    ) -> None:
        form = {"name": "forged", "type": "public", "project": tenant.project_id}
        response = await dashboard.http.post("/settings/api-keys", data=form)
        assert response.status_code == 403 and "forged" not in await key_names(services, tenant)

    async def test_password_attempts_are_throttled(
        self, dashboard: Dashboard, member: Member, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Two a minute (not ten): refilling takes 30 s a token, so no slow hash refills one mid-test.
        monkeypatch.setattr(passwords, "ATTEMPTS_PER_ACCOUNT", 2)
        form = {"name": "guess", "type": "secret", "password": "guess"}
        for _attempt in range(2):  # the account's bucket, clamped to two tokens, gives two
            answer = await dashboard.post("/settings/api-keys", form, headers=HTMX)
            if "Too many password attempts" in answer.text:
                break
            assert "That is not your password." in answer.text
        refused = await dashboard.post(
            "/settings/api-keys", {**form, "password": member.password}, headers=HTMX
        )
        assert (
            "Too many password attempts. Try again in" in refused.text and 'id="new-key"' not in refused.text
        )

    async def test_guesses_at_sign_in_and_here_share_one_budget(
        self,
        dashboard: Dashboard,
        anonymous: Dashboard,
        member: Member,
        services: Services,
        tenant: Tenant,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A stolen session buys no more guesses than the sign-in form gives."""
        monkeypatch.setattr(passwords, "ATTEMPTS_PER_ACCOUNT", 2)
        for _attempt in range(3):  # two wrong guesses, then the refusal
            form = await anonymous.get("/login")
            answer = await anonymous.http.post(
                "/login", data={"email": member.email, "password": "guess", "csrf_token": csrf_in(form.text)}
            )
            if answer.status_code == 429:
                break
        assert answer.status_code == 429 and "Too many sign-in attempts. Try again in" in answer.text
        right = {"name": "after guesses", "type": "secret", "password": member.password}
        refused = await dashboard.post("/settings/api-keys", right, headers=HTMX)
        assert "Too many password attempts" in refused.text and "after guesses" not in await key_names(
            services, tenant
        )


class TestRevoke:
    async def test_a_public_key_after_confirmation(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        key = tenant.created.public_key
        page = (await dashboard.get("/settings/api-keys")).text
        assert f'data-open-dialog="revoke-{key.id}"' in page and f'<dialog id="revoke-{key.id}"' in page
        response = await dashboard.post(f"/settings/api-keys/{key.id}/revoke")
        assert (
            response.status_code == 303
            and response.headers["location"] == f"/settings/api-keys?revoked={key.id}"
        )
        shown = (await dashboard.get(response.headers["location"])).text
        assert "“default public key” (<code>pk_…" in shown and "is revoked" in shown
        assert f'data-open-dialog="revoke-{key.id}"' not in shown and "badge revoked" in shown
        refused = await client.get("/v1/me", headers=tenant.public)
        assert refused.status_code == 401 and refused.json()["reason"] == "KEY_REVOKED"

    async def test_a_secret_key_needs_the_password_again(
        self, dashboard: Dashboard, member: Member, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        key = tenant.created.secret_key
        url = f"/settings/api-keys/{key.id}/revoke"
        for password, message in (
            ("", "Enter your password to confirm."),
            ("nope", "That is not your password."),
        ):
            refused = await dashboard.post(url, {"password": password})
            assert refused.status_code == 400
            assert f'<p class="field-error" id="revoke-{key.id}-error">{message}</p>' in refused.text
            dialog = re.search(rf'<dialog id="revoke-{key.id}"[^>]*>', refused.text)
            assert dialog is not None and "data-open-on-load" in dialog.group(0)
            assert (await client.get("/v1/me", headers=tenant.secret)).status_code == 200
        assert (await dashboard.post(url, {"password": member.password})).status_code == 303
        refused_key = await client.get("/v1/me", headers=tenant.secret)
        assert refused_key.status_code == 401 and refused_key.json()["reason"] == "KEY_REVOKED"

    async def test_another_organizations_key_is_the_404_page(
        self, dashboard: Dashboard, member: Member, client: httpx.AsyncClient, other_tenant: Tenant
    ) -> None:
        for key in (other_tenant.created.secret_key, other_tenant.created.public_key):
            response = await dashboard.post(
                f"/settings/api-keys/{key.id}/revoke", {"password": member.password}
            )
            assert response.status_code == 404 and "Not found" in response.text
        assert (await dashboard.post("/settings/api-keys/key_nope/revoke")).status_code == 404
        assert (await client.get("/v1/me", headers=other_tenant.secret)).status_code == 200

    async def test_without_the_csrf_token_nothing_is_revoked(
        self, dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        response = await dashboard.http.post(f"/settings/api-keys/{tenant.created.public_key.id}/revoke")
        assert response.status_code == 403
        known = await client.get("/v1/me", headers=tenant.public)
        assert known.status_code == 403 and known.json()["reason"] == "PUBLIC_KEY_NOT_ALLOWED"

    async def test_signed_out_is_sent_to_sign_in(self, anonymous: Dashboard, tenant: Tenant) -> None:
        response = await anonymous.http.post(f"/settings/api-keys/{tenant.created.public_key.id}/revoke")
        assert response.status_code == 303 and response.headers["location"].startswith("/login")
