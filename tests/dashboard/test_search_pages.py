"""Message search: the API's syntax, highlighted snippets (only <mark> is markup), links, pages."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.dashboard.support import Dashboard
from tests.dashboard.test_threads_pages import seal
from tests.support import Tenant, make_thread
from threadline.dashboard.pages import search as search_page
from threadline.runtime import Services


async def say(
    client: httpx.AsyncClient, tenant: Tenant, thread: str, content: str, role: str = "user"
) -> None:
    response = await client.post(
        f"/v1/threads/{thread}/messages", headers=tenant.secret, json={"role": role, "content": content}
    )
    assert response.status_code == 201, response.text


async def test_snippets_are_highlighted_and_escaped(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    thread = await make_thread(client, tenant)
    await say(client, tenant, thread, "The deploy <script>alert(1)</script> failed at checkout")
    await say(client, tenant, thread, "Nothing to see here")
    await seal(services)
    page = await dashboard.get("/search", params={"q": "deploy"})
    assert page.status_code == 200
    assert "<mark>deploy</mark>" in page.text
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert f'href="/threads/{thread}#' in page.text and "Nothing to see here" not in page.text
    assert "1 message match." in page.text


async def test_the_apis_syntax_role_filter_and_pages(
    dashboard: Dashboard,
    client: httpx.AsyncClient,
    tenant: Tenant,
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread = await make_thread(client, tenant)
    for i in range(5):
        await say(client, tenant, thread, f"invoice number {i} overdue")
    await say(client, tenant, thread, "invoice paid", role="assistant")
    await seal(services)
    excluded = await dashboard.get("/search", params={"q": "invoice -overdue"})
    assert excluded.text.count('class="message ') == 1 and "<mark>invoice</mark> paid" in excluded.text
    by_role = await dashboard.get("/search", params={"q": "invoice", "role": "assistant"})
    assert by_role.text.count('class="message ') == 1
    monkeypatch.setattr(search_page, "PAGE_SIZE", 2)
    first = await dashboard.get("/search", params={"q": "overdue"})
    assert "Page 1 of 3" in first.text and first.text.count('class="message ') == 2
    following = re.search(r'<a href="([^"]+)">Next page</a>', first.text)
    assert following is not None
    second = await dashboard.get(following.group(1).replace("&amp;", "&"))
    assert "Page 2 of 3" in second.text and "Previous page" in second.text
    bad_role = await dashboard.get("/search", params={"q": "invoice", "role": "robot"})
    assert bad_role.status_code == 400 and "The role must be one of" in bad_role.text


async def test_no_words_shows_the_form_and_other_organizations_stay_out(
    dashboard: Dashboard, client: httpx.AsyncClient, other_tenant: Tenant, services: Services
) -> None:
    empty = await dashboard.get("/search")
    assert empty.status_code == 200 and 'for="q">Search messages</label>' in empty.text
    thread = await make_thread(client, other_tenant)
    await say(client, other_tenant, thread, "confidential merger")
    await seal(services)
    page = await dashboard.get("/search", params={"q": "merger"})
    assert "0 messages match." in page.text and thread not in page.text
