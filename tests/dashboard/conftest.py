"""Dashboard fixtures: a person of ``tenant`` (and one of ``other_tenant``) and ASGI clients signed in as
them. Redirects are not followed: tests check where a page sends the browser."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from tests.dashboard.support import Dashboard, Member, make_member
from tests.support import Tenant
from threadline.runtime import Services


@pytest.fixture
async def member(services: Services, tenant: Tenant) -> Member:
    return await make_member(services, tenant, f"ada-{secrets.token_hex(4)}@acme.test")


@pytest.fixture
async def other_member(services: Services, other_tenant: Tenant) -> Member:
    return await make_member(services, other_tenant, f"grace-{secrets.token_hex(4)}@globex.test")


@pytest.fixture
async def anonymous(app: FastAPI) -> AsyncIterator[Dashboard]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield Dashboard(http)


@pytest.fixture
async def dashboard(app: FastAPI, member: Member) -> AsyncIterator[Dashboard]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        signed_in = Dashboard(http)
        await signed_in.sign_in(member)
        yield signed_in
