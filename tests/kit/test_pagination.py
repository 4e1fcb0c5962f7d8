"""The cursor helper over a real list (projects) and the page-based helper's arithmetic."""

from __future__ import annotations

import math

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from tests.support import Tenant
from threadline.kit.errors import BadRequest
from threadline.kit.pagination import (
    PageParams,
    decode_cursor,
    encode_cursor,
    fetch_numbered_page,
    total_pages,
)
from threadline.projects.service import create_project
from threadline.projects.tables import projects
from threadline.runtime import Services


async def test_cursor_walk_returns_each_item_once_in_order(
    client: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    async with services.db.transaction() as conn:
        created = [tenant.project_id] + [
            (await create_project(conn, tenant.org_id, f"p{i}", now=services.clock.now())).id
            for i in range(249)
        ]
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, str | int] = {"limit": 100} if cursor is None else {"limit": 100, "cursor": cursor}
        response = await client.get("/v1/projects", headers=tenant.secret, params=params)
        assert response.status_code == 200
        page = response.json()
        seen.extend(p["id"] for p in page["data"])
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == list(reversed(created))  # newest first, each exactly once
    assert len(set(seen)) == 250


async def test_default_page_size_is_20(client: httpx.AsyncClient, tenant: Tenant, services: Services) -> None:
    async with services.db.transaction() as conn:
        for i in range(25):
            await create_project(conn, tenant.org_id, f"p{i}", now=services.clock.now())
    page = (await client.get("/v1/projects", headers=tenant.secret)).json()
    assert len(page["data"]) == 20 and page["nextCursor"] is not None


def test_cursor_round_trip_and_rejection() -> None:
    assert (
        decode_cursor(encode_cursor("proj_01m7yg84h7zr41avmzaw6ksd99")) == "proj_01m7yg84h7zr41avmzaw6ksd99"
    )
    for bad in ("", "x", encode_cursor("proj_1' OR 1=1 --"), "Yz"):
        with pytest.raises(BadRequest) as raised:
            decode_cursor(bad)
        assert raised.value.reason == "INVALID_CURSOR"


@given(total=st.integers(min_value=0, max_value=10_000), limit=st.integers(min_value=1, max_value=100))
def test_total_pages(total: int, limit: int) -> None:
    assert total_pages(total, limit) == math.ceil(total / limit)


async def test_numbered_pages_cover_every_row_once(tenant: Tenant, services: Services) -> None:
    async with services.db.transaction() as conn:
        for i in range(46):
            await create_project(conn, tenant.org_id, f"n{i}", now=services.clock.now())
        query = (
            sa.select(projects.c.id)
            .where(projects.c.organization_id == tenant.org_id)
            .order_by(projects.c.id)
        )
        seen: list[str] = []
        for page in range(1, 7):
            rows, total = await fetch_numbered_page(conn, query, PageParams(page=page, limit=10))
            assert total == 47
            seen.extend(r.id for r in rows)
        assert len(seen) == 47 == len(set(seen))
        past_end, total = await fetch_numbered_page(conn, query, PageParams(page=9, limit=10))
        assert list(past_end) == [] and total == 47
