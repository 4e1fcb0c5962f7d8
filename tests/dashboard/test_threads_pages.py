"""The threads list (paging, metadata filter, thread search), a thread's page and "Start run"."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.dashboard.support import Dashboard
from tests.runs.helpers import start_run, wait_for_status
from tests.support import Tenant, make_thread
from threadline.dashboard.pages import threads as thread_pages
from threadline.runtime import Services

_THREAD_LINKS = re.compile(r'<td><a href="/threads/(thr_[0-9a-z]+)">')


async def seal(services: Services) -> None:
    """Search reads sealed postings on PostgreSQL (the chores seal every two seconds)."""
    if services.postings is not None:
        await services.postings.run_once()


async def test_newest_first_page_by_page(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = [await make_thread(client, tenant, title=f"Thread {i}") for i in range(5)]
    monkeypatch.setattr(thread_pages, "PAGE_SIZE", 2)
    seen: list[str] = []
    url: str | None = "/threads"
    while url is not None:
        page = await dashboard.get(url)
        assert page.status_code == 200
        seen += _THREAD_LINKS.findall(page.text)
        found = re.search(r'<a href="([^"]+)">Older threads</a>', page.text)
        url = found.group(1).replace("&amp;", "&") if found else None
    assert seen == made[::-1]


async def test_metadata_filter_as_the_api(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    acme = await make_thread(client, tenant, title="Acme", metadata={"customer": "acme", "plan": "pro"})
    await make_thread(client, tenant, title="Globex", metadata={"customer": "globex"})
    form = await dashboard.get("/threads", params={"key": "customer", "value": "acme"})
    assert form.status_code == 303 and form.headers["location"] == "/threads?metadata%5Bcustomer%5D=acme"
    page = await dashboard.get(form.headers["location"])
    assert _THREAD_LINKS.findall(page.text) == [acme]
    both = await dashboard.get("/threads", params={"metadata[customer]": "acme", "metadata[plan]": "free"})
    assert _THREAD_LINKS.findall(both.text) == [] and "No thread matches this filter." in both.text
    bad = await dashboard.get("/threads", params={"metadata[]": "x"})
    assert bad.status_code == 400 and "out of bounds" in bad.text
    quoted = await make_thread(client, tenant, title="Quoted", metadata={'env","x': "prod"})
    odd = await dashboard.get("/threads", params={'metadata[env","x]': "prod"})
    assert odd.status_code == 200 and _THREAD_LINKS.findall(odd.text) == [quoted]


async def test_thread_search_as_the_api(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    wanted = await make_thread(client, tenant, title="Checkout <script>alert(1)</script> deploy")
    await make_thread(client, tenant, title="Billing question")
    await seal(services)
    page = await dashboard.get("/threads", params={"q": "checkout"})
    assert page.status_code == 200
    assert f'href="/threads/{wanted}"' in page.text and "Billing question" not in page.text
    assert "<mark>Checkout</mark>" in page.text and "<script>alert(1)" not in page.text
    assert "&lt;script&gt;" in page.text
    refused = await dashboard.get("/threads", params={"q": '"unclosed'})
    assert refused.status_code in (200, 400)  # the API's parser decides; never a server error


async def test_thread_page_timeline_runs_and_escaping(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant, title="Support")
    await client.post(
        f"/v1/threads/{thread}/messages",
        headers=tenant.secret,
        json={"role": "user", "content": "<script>alert('x')</script> help"},
    )
    run = await start_run(client, tenant, thread, input="hello #notools")
    await wait_for_status(client, tenant, run["id"], "completed")
    page = await dashboard.get(f"/threads/{thread}")
    assert page.status_code == 200
    assert '<li class="message user"' in page.text and '<li class="message assistant"' in page.text
    assert "<script>alert('x')</script>" not in page.text and "&lt;script&gt;" in page.text
    assert f'href="/runs/{run["id"]}"' in page.text
    assert f'<span class="badge completed" data-run-badge="{run["id"]}">' in page.text
    assert 'for="message">Message</label>' in page.text and ">Start run</button>" in page.text


async def test_turns_without_text_say_what_they_did(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A run's turn that only called tools is a message without content (docs/behaviour.md): the timeline
    names its tools instead of an empty box, and marks an answer a failure cut off."""
    thread = await make_thread(client, tenant, title="Tools")
    run = await start_run(client, tenant, thread, input="why did it fail?")
    await wait_for_status(client, tenant, run["id"], "completed")
    page = await dashboard.get(f"/threads/{thread}")
    assert "Called search_messages, query_logs." in page.text and "Called create_artifact." in page.text

    failed_thread = await make_thread(client, tenant, title="Failing")
    failed = await start_run(client, tenant, failed_thread, input="explain #fail")
    await wait_for_status(client, tenant, failed["id"], "failed")
    page = await dashboard.get(f"/threads/{failed_thread}")
    assert (
        "(no text)" in page.text and "Cut off: the run failed before this answer was finished." in page.text
    )


async def test_start_run_from_the_page(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant)
    refused = await dashboard.http.post(f"/threads/{thread}/runs", data={"message": "hi #notools"})
    assert refused.status_code == 403  # no CSRF token
    empty = await dashboard.post(f"/threads/{thread}/runs", {"message": "  "})
    assert empty.status_code == 400 and "Write the message the run answers." in empty.text
    slow = "hello #notools #chunks=2000 #delay=20"
    started = await dashboard.post(f"/threads/{thread}/runs", {"message": slow})
    assert started.status_code == 303 and started.headers["location"].startswith(f"/threads/{thread}")
    page = await dashboard.get(f"/threads/{thread}")
    assert 'role="log"' in page.text and "sse-connect=" in page.text and "Cancel run" in page.text
    busy = await dashboard.post(f"/threads/{thread}/runs", {"message": "another"})
    assert busy.status_code == 409 and "has an active run" in busy.text
    assert 'aria-invalid="true"' in busy.text and ">another</textarea>" in busy.text
    listed = (await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret)).json()["data"]
    assert len(listed) == 1
    await client.post(f"/v1/runs/{listed[0]['id']}/cancel", headers=tenant.secret)
    messages = (await client.get(f"/v1/threads/{thread}/messages", headers=tenant.secret)).json()["data"]
    assert messages[0]["content"] == slow and messages[0]["runId"]


async def test_new_thread(dashboard: Dashboard) -> None:
    created = await dashboard.post("/threads", {"title": "From the dashboard"})
    assert created.status_code == 303
    page = await dashboard.get(created.headers["location"])
    assert "From the dashboard" in page.text


async def test_another_organizations_thread_is_not_found(
    dashboard: Dashboard, client: httpx.AsyncClient, other_tenant: Tenant
) -> None:
    theirs = await make_thread(client, other_tenant, title="Secret plans")
    assert "Secret plans" not in (await dashboard.get("/threads")).text
    for response in (
        await dashboard.get(f"/threads/{theirs}"),
        await dashboard.post(f"/threads/{theirs}/runs", {"message": "hi"}),
    ):
        assert response.status_code == 404 and "Not found" in response.text
    assert (await client.get(f"/v1/threads/{theirs}/runs", headers=other_tenant.secret)).json()["data"] == []
