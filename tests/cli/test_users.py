"""``threadline users``: dashboard logins made and reset by an operator, then used in the dashboard."""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import Backend
from tests.dashboard.support import csrf_in
from tests.support import Tenant, threadline
from threadline.config import Settings


async def run(
    backend: Backend, settings: Settings, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """The command in a thread: the test's app shares the database and its event loop must keep running."""
    return await asyncio.to_thread(threadline, "users", *args, env=backend.env(settings), check=check)


@pytest.fixture
async def browser(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield http


async def sign_in(browser: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    """A fresh browser's sign-in to the dashboard (303 when the login works)."""
    browser.cookies.clear()
    form = await browser.get("/login")
    data = {"email": email, "password": password, "csrf_token": csrf_in(form.text)}
    return await browser.post("/login", data=data)


async def test_create_a_login_then_reset_its_password(
    backend: Backend, settings: Settings, tenant: Tenant, browser: httpx.AsyncClient
) -> None:
    ada, bob = (f"{name}-{secrets.token_hex(4)}@acme.test" for name in ("ada", "bob"))
    made = await run(backend, settings, "create", "--org", tenant.org_id, "--email", ada.title(), "--json")
    created = json.loads(made.stdout)
    assert set(created) == {"id", "organizationId", "email", "password"}
    assert created["id"].startswith("usr_") and created["organizationId"] == tenant.org_id
    assert created["email"] == ada and len(created["password"]) >= 16
    assert (await sign_in(browser, ada, created["password"])).status_code == 303

    human = await run(backend, settings, "create", "--org", tenant.org_id, "--email", bob)
    assert bob in human.stdout and "shown once" in human.stdout
    bob_password = next(line.split()[1] for line in human.stdout.splitlines() if line.startswith("password"))
    assert (await sign_in(browser, bob, bob_password)).status_code == 303

    reset = await run(backend, settings, "set-password", ada.upper())
    assert "shown once" in reset.stdout and "1 dashboard session(s) ended" in reset.stdout
    new_password = next(line.split()[1] for line in reset.stdout.splitlines() if line.startswith("password"))
    assert new_password != created["password"]
    assert (await sign_in(browser, ada, created["password"])).status_code == 400
    assert (await sign_in(browser, ada, new_password)).status_code == 303

    again = json.loads((await run(backend, settings, "set-password", ada, "--json")).stdout)
    assert again["email"] == ada and again["sessionsEnded"] == 1 and again["password"] != new_password


async def test_errors_are_clear_and_exit_non_zero(
    backend: Backend, settings: Settings, tenant: Tenant, other_tenant: Tenant
) -> None:
    ada = f"ada-{secrets.token_hex(4)}@acme.test"  # the database is the shape's, shared by every test
    await run(backend, settings, "create", "--org", tenant.org_id, "--email", ada)
    for args, message in (
        (
            ("create", "--org", "org_missing", "--email", "x@acme.test"),
            "organization org_missing was not found",
        ),
        (
            ("create", "--org", other_tenant.org_id, "--email", ada.upper()),
            f"{ada} already has a login (emails are unique across organizations)",
        ),
        (
            ("create", "--org", tenant.org_id, "--email", "ada.acme.test"),
            "'ada.acme.test' is not an email address",
        ),
        (("create", "--org", tenant.org_id, "--email", "a b@acme.test"), "is not an email address"),
        (("set-password", "nobody@acme.test"), "there is no login with the email nobody@acme.test"),
    ):
        result = await run(backend, settings, *args, check=False)
        assert result.returncode == 1, args
        assert result.stderr.startswith("error: ") and message in result.stderr, result.stderr
        assert result.stdout == ""
    missing = await run(backend, settings, "create", "--email", "x@acme.test", check=False)
    assert missing.returncode == 2 and "--org" in missing.stderr
