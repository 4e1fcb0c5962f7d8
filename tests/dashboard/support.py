"""Helpers for the dashboard's tests: people who sign in, and a client that signs in and sends the
session's CSRF token with every form, as the pages do."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support import Tenant
from threadline.runtime import Services
from threadline.users.service import create_owner

_CSRF = re.compile(r'name="csrf-token" content="([^"]+)"|name="csrf_token" value="([^"]+)"')
PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class Member:
    """A dashboard login of one organization."""

    tenant: Tenant
    email: str
    password: str
    user_id: str


async def make_member(services: Services, tenant: Tenant, email: str, password: str = PASSWORD) -> Member:
    async with services.db.transaction() as conn:
        user = await create_owner(conn, tenant.org_id, email, password, now=services.clock.now())
    return Member(tenant, user.email, password, user.id)


def csrf_in(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "no CSRF token on the page"
    return found.group(1) or found.group(2)


class Dashboard:
    """An ASGI client of the dashboard, signed in as ``member`` by ``sign_in``."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.csrf = ""

    async def sign_in(self, member: Member) -> httpx.Response:
        form = await self.http.get("/login")
        response = await self.http.post(
            "/login",
            data={"email": member.email, "password": member.password, "csrf_token": csrf_in(form.text)},
        )
        assert response.status_code == 303, response.text
        self.csrf = csrf_in((await self.http.get("/settings/api-keys")).text)
        return response

    async def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return await self.http.get(url, **kwargs)

    async def post(self, url: str, data: dict[str, Any] | None = None, **kwargs: Any) -> httpx.Response:
        """A form post carrying the session's CSRF token, as every form of the dashboard does."""
        return await self.http.post(url, data={"csrf_token": self.csrf, **(data or {})}, **kwargs)
