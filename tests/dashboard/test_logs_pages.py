"""``/logs``: filters in the URL, validated as the API validates them; cursor pages; a record's detail; the
live tail as HTML fragments over SSE, resuming after ``Last-Event-ID``."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.dashboard.logs_support import open_intake
from tests.dashboard.support import Dashboard
from tests.support import Tenant
from threadline.config import Settings
from threadline.dashboard.pages import logs
from threadline.kit.clock import isoformat
from threadline.runtime import Services

_ITEM = re.compile(r'<li class="record" id="(log_[0-9a-z]{26})"')
_TEXT = re.compile(r'<span class="text">([^<]*)</span>')


@pytest.fixture
async def intake(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with open_intake(settings, services) as http:
        yield http


async def send(intake: httpx.AsyncClient, tenant: Tenant, records: list[dict[str, Any]]) -> None:
    response = await intake.post("/v1/logs", json=records, headers=tenant.public)
    assert response.status_code == 202, response.text


def messages(page: str) -> list[str]:
    return [html.unescape(text) for text in _TEXT.findall(page)]


def sse_events(text: str) -> list[tuple[str | None, str | None, str]]:
    """(id, event, data) of each frame with data; the data lines joined as an EventSource joins them."""
    out = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        fields: dict[str, list[str]] = {}
        for line in lines:
            name, _, value = line.partition(": ")
            fields.setdefault(name, []).append(value)
        if "data" in fields:
            out.append(
                (fields.get("id", [None])[0], fields.get("event", [None])[0], "\n".join(fields["data"]))
            )
    return out


async def test_newest_first_with_filters_kept_in_the_url(
    dashboard: Dashboard, intake: httpx.AsyncClient, tenant: Tenant
) -> None:
    await send(
        intake,
        tenant,
        [
            {"message": "boot ok", "level": "info"},
            {"message": "disk slow", "level": "warn"},
            {"message": "db timeout", "level": "error", "attributes": {"host": "db-1"}},
        ],
    )
    page = await dashboard.get("/logs")
    assert page.status_code == 200
    assert messages(page.text) == ["db timeout", "disk slow", "boot ok"]
    assert 'role="log"' in page.text and "Live</button>" in page.text and ">Pause</button>" in page.text
    assert '<span class="badge level error">error</span>' in page.text

    filtered = await dashboard.get("/logs", params={"level": "warn", "q": "timeout"})
    assert messages(filtered.text) == ["db timeout"]
    assert '<option value="warn" selected>' in filtered.text and 'value="timeout"' in filtered.text
    # The live tail carries the same filters.
    assert 'data-stream="/logs/stream?level=warn&amp;q=timeout"' in filtered.text

    since = isoformat(datetime.now(UTC) + timedelta(minutes=5))[:16]
    later = await dashboard.get("/logs", params={"since": since, "kind": "log"})
    assert messages(later.text) == [] and "No records match these filters." in later.text
    assert (await dashboard.get("/logs", params={"kind": "event"})).text.count('class="record"') == 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"level": "loud"}, "Level: input should be"),
        ({"kind": "metric"}, "Kind: input should be"),
        ({"projectId": "proj_nope"}, "Choose one of the organization&#39;s projects."),
        ({"since": "yesterday"}, "Since: enter a date and time"),
        ({"since": "2026-01-02T00:00", "until": "2026-01-01T00:00"}, "since must be earlier than until."),
        ({"q": "x" * 513}, "Search: string should have at most 512 characters"),
        ({"cursor": "garbage"}, "The cursor is malformed"),
    ],
)
async def test_a_bad_filter_is_named_at_its_field(
    dashboard: Dashboard, params: dict[str, str], message: str
) -> None:
    response = await dashboard.get("/logs", params=params)
    assert response.status_code == 400
    assert message in response.text
    assert 'class="field-error"' in response.text and 'role="log"' not in response.text


async def test_cursor_pages_walk_every_record_once(
    dashboard: Dashboard, intake: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "PAGE_SIZE", 2)
    await send(intake, tenant, [{"message": f"line {n}", "level": "warn"} for n in range(5)])
    seen: list[str] = []
    url: str | None = "/logs?level=warn"
    while url is not None:
        page = await dashboard.get(url)
        assert page.status_code == 200
        seen += messages(page.text)
        older = re.search(r'<a href="(/logs\?[^"]+)">Older records</a>', page.text)
        url = html.unescape(older.group(1)) if older else None
        if url is not None:
            assert "level=warn" in url and "cursor=" in url
    assert seen == [f"line {n}" for n in (4, 3, 2, 1, 0)]


async def test_record_detail_escapes_everything(
    dashboard: Dashboard, intake: httpx.AsyncClient, tenant: Tenant
) -> None:
    trace, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    evil = "<script>alert(1)</script>"
    await send(
        intake,
        tenant,
        [{"message": evil, "attributes": {"html": evil, "n": 1}, "traceId": trace, "spanId": span}],
    )
    page = await dashboard.get("/logs")
    assert "<script>alert" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    record_id = _ITEM.findall(page.text)[0]
    detail = await dashboard.get(f"/logs/{record_id}")
    assert detail.status_code == 200
    assert "<script>alert" not in detail.text
    assert "&#34;html&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;,\n  &#34;n&#34;: 1" in detail.text
    assert trace in detail.text and span in detail.text and "<details open>" in detail.text


async def test_another_organization_sees_none_of_it(
    dashboard: Dashboard, intake: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    await send(intake, other_tenant, [{"message": "globex secret"}])
    assert _ITEM.findall((await dashboard.get("/logs")).text) == []
    await send(intake, tenant, [{"message": "mine"}])
    assert messages((await dashboard.get("/logs")).text) == ["mine"]
    foreign = await dashboard.get("/logs", params={"projectId": other_tenant.project_id})
    assert "globex secret" not in foreign.text and other_tenant.project_id not in messages(foreign.text)
    assert (await dashboard.get("/logs/log_00000000000000000000000000")).status_code == 404
    assert (await dashboard.get("/logs/not-an-id")).status_code == 404


async def test_foreign_record_id_is_not_found(
    dashboard: Dashboard, intake: httpx.AsyncClient, client: httpx.AsyncClient, other_tenant: Tenant
) -> None:
    await send(intake, other_tenant, [{"message": "globex secret"}])
    listed = await client.get("/v1/logs", headers=other_tenant.secret)
    foreign_id = listed.json()["data"][0]["id"]
    response = await dashboard.get(f"/logs/{foreign_id}")
    assert response.status_code == 404 and "globex secret" not in response.text


async def test_live_tail_sends_fragments_and_resumes_after_last_event_id(
    dashboard: Dashboard, intake: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """The tail ends by itself once ``until`` has passed, which lets the test read the whole response."""
    page = await dashboard.get("/logs")
    after = re.search(r'data-after="([^"]+)"', page.text)
    assert after is not None
    await send(intake, other_tenant, [{"message": "not yours"}])
    await send(
        intake,
        tenant,
        [{"message": "one <b>"}, {"message": "two\r\nlines\u2028", "level": "warn"}, {"message": "three"}],
    )
    until = isoformat(datetime.now(UTC) + timedelta(milliseconds=300))
    response = await dashboard.get(
        "/logs/stream",
        params={"until": until, "after": after.group(1)},
        headers={"accept": "text/event-stream"},
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == (None, None, "[DONE]")
    records = events[:-1]
    assert [event for _, event, _ in records] == ["record"] * 3
    assert [messages(data) for _, _, data in records] == [["one <b>"], ["two\r\nlines\u2028"], ["three"]]
    assert all(data.startswith('<li class="record" id="log_') for _, _, data in records)
    assert "not yours" not in response.text and "<b>" not in response.text and "\r" not in response.text

    # A reconnecting EventSource sends Last-Event-ID, which wins over the page's starting point.
    resumed = await dashboard.get(
        "/logs/stream",
        params={"until": until, "after": after.group(1)},
        headers={"accept": "text/event-stream", "last-event-id": str(records[0][0])},
    )
    assert [messages(data) for _, _, data in sse_events(resumed.text)[:-1]] == [
        ["two\r\nlines\u2028"],
        ["three"],
    ]
    filtered = await dashboard.get(
        "/logs/stream", params={"until": until, "after": after.group(1), "level": "warn"}
    )
    assert len(sse_events(filtered.text)) == 2


async def test_live_tail_refuses_bad_filters_and_strangers(
    dashboard: Dashboard, anonymous: Dashboard
) -> None:
    bad = await dashboard.get("/logs/stream", params={"level": "loud"})
    assert bad.status_code == 400 and "Level" in bad.text
    assert (await dashboard.get("/logs/stream", params={"after": "garbage"})).status_code == 400
    signed_out = await anonymous.get("/logs/stream", headers={"accept": "text/event-stream"})
    assert signed_out.status_code == 401
