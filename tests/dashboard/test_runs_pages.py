"""The run page (live view and replay), its SSE fragments and their resumption, cancel, artifacts."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import httpx
import pytest

from tests.dashboard.support import Dashboard
from tests.runs.helpers import SLOW, read_stream, start_run, wait_for_event, wait_for_status
from tests.support import Tenant, make_thread
from threadline.dashboard.pages import runs as run_pages
from threadline.runtime import Services

_TEXT_BLOCK = re.compile(r'<div class="text" id="t-([^"]+)">(.*?)</div>', re.DOTALL)
_TEXT_UPDATE = re.compile(r'<span hx-swap-oob="beforeend:#t-([^"]+)">(.*?)</span>', re.DOTALL)
_EVENT_IDS = re.compile(r'id="ev-(\d+)"')


@dataclass
class Message:
    event: str
    data: str
    id: str | None


@dataclass
class Screen:
    """What the browser would show of a run's text: blocks as rendered, then the streamed deltas
    appended to them (as htmx applies the out-of-band updates)."""

    texts: dict[str, str] = field(default_factory=dict)
    event_ids: list[int] = field(default_factory=list)

    def apply(self, fragment: str) -> None:
        for key, text in _TEXT_UPDATE.findall(fragment):
            assert key in self.texts, "an update of a block never shown"
            self.texts[key] += html.unescape(text)
        without_updates = _TEXT_UPDATE.sub("", fragment)
        for key, text in _TEXT_BLOCK.findall(without_updates):
            assert key not in self.texts, "a block shown twice"
            self.texts[key] = html.unescape(text)
        self.event_ids += [int(seq) for seq in _EVENT_IDS.findall(without_updates)]

    @property
    def answer(self) -> str:
        return list(self.texts.values())[-1]


def parse(body: str) -> list[Message]:
    found = []
    for block in body.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        fields = [line.split(": ", 1) if ": " in line else [line.rstrip(":"), ""] for line in lines]
        data = [value for name, value in fields if name == "data"]
        if not data:
            continue
        event = next((value for name, value in fields if name == "event"), "message")
        ids = [value for name, value in fields if name == "id"]
        found.append(Message(event, "\n".join(data), ids[0] if ids else None))
    return found


async def finished_run(
    client: httpx.AsyncClient, tenant: Tenant, text: str
) -> tuple[str, list[dict[str, object]]]:
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=text)
    events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
    return run["id"], [e for e in events if isinstance(e, dict)]


def answer_of(events: list[dict[str, object]]) -> str:
    return str([e for e in events if e["type"] == "text_complete"][-1]["text"])


async def test_replay_of_a_completed_run(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    run_id, events = await finished_run(client, tenant, "Why did the <script>alert(1)</script> deploy fail?")
    page = await dashboard.get(f"/runs/{run_id}")
    assert page.status_code == 200
    body = page.text
    assert 'class="badge completed"' in body and "sse-connect" not in body and "Cancel run" not in body
    assert "Tool call <code>search_messages</code>" in body
    assert "Tool call <code>create_artifact</code>" in body
    assert 'role="log"' in body and "summary.md" in body
    completed = events[-1]
    usage = completed["usage"]
    assert isinstance(usage, dict)
    assert f"{usage['inputTokens']} input · {usage['outputTokens']} output tokens" in body
    screen = Screen()
    screen.apply(body[body.index('id="run-log"') :])
    assert screen.answer == answer_of(events)
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert sorted(set(screen.event_ids)) == screen.event_ids  # each block once, in order


async def test_the_stream_resumes_after_the_later_cursor_without_repeats(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_pages, "_BATCH", 7)  # many messages, as a live run sends them
    run_id, events = await finished_run(client, tenant, "hello #notools #chunks=40")
    whole = await dashboard.get(f"/runs/{run_id}/events")
    assert whole.headers["content-type"].startswith("text/event-stream")
    messages = parse(whole.text)
    assert [m.event for m in messages[-1:]] == ["done"]
    runs = [m for m in messages if m.event == "run"]
    assert [m.id for m in runs] == [f"{run_id}.{min(n, len(events))}" for n in range(7, len(events) + 7, 7)]
    screen = Screen()
    for message in runs:
        screen.apply(message.data)
    assert screen.answer == answer_of(events)
    # A browser that showed the first three messages reconnects: it gets exactly the rest.
    resumed = Screen()
    for message in runs[:3]:
        resumed.apply(message.data)
    again = await dashboard.get(
        f"/runs/{run_id}/events",
        params={"after": f"{run_id}.2"},  # the page's older position loses to the browser's
        headers={"Last-Event-ID": str(runs[2].id)},
    )
    rest = [m for m in parse(again.text) if m.event == "run"]
    assert [m.id for m in rest] == [m.id for m in runs[3:]]
    for message in rest:
        resumed.apply(message.data)
    assert resumed.answer == answer_of(events) and resumed.event_ids == screen.event_ids


async def test_a_live_run_streams_and_can_be_cancelled(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=f"hello {SLOW}")
    await wait_for_event(services, run["id"], "text_chunk")
    page = await dashboard.get(f"/runs/{run['id']}")
    assert "Cancel run" in page.text and 'class="badge running"' in page.text
    connect = re.search(r'sse-connect="/runs/[^"?]+/events\?after=([^"]+)"', page.text)
    assert connect is not None
    screen = Screen()
    screen.apply(page.text[page.text.index('id="run-log"') :])
    cancelled = await dashboard.post(f"/runs/{run['id']}/cancel", {"back": f"/threads/{thread}"})
    assert cancelled.status_code == 303 and cancelled.headers["location"] == f"/threads/{thread}"
    assert (await wait_for_status(client, tenant, run["id"], "cancelled"))["status"] == "cancelled"
    # The stream the page opened (here after the cancel) brings the rest of the text and the end.
    rest = parse((await dashboard.get(f"/runs/{run['id']}/events?after={connect.group(1)}")).text)
    assert rest[-1].event == "done" and 'id="run-status" class="badge cancelled"' in rest[-2].data
    assert 'id="run-actions" hx-swap-oob="true"></div>' in rest[-2].data  # no "Cancel run" any more
    for message in rest[:-1]:
        screen.apply(message.data)
    events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
    chunks = [e["delta"] for e in events if isinstance(e, dict) and e["type"] == "text_chunk"]
    assert screen.answer == "".join(chunks)
    replay = await dashboard.get(f"/runs/{run['id']}")
    assert 'class="badge cancelled"' in replay.text and "Cancel run" not in replay.text


async def test_cancel_needs_the_csrf_token(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=f"hello {SLOW}")
    refused = await dashboard.http.post(f"/runs/{run['id']}/cancel", data={})
    assert refused.status_code == 403
    assert (await dashboard.post(f"/runs/{run['id']}/cancel")).status_code == 303
    await wait_for_status(client, tenant, run["id"], "cancelled")


async def test_artifacts_download_as_plain_text(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    _, events = await finished_run(client, tenant, "Summarize the checkout deploy")
    artifact = next(e for e in events if e["type"] == "artifact")
    response = await dashboard.get(f"/artifacts/{artifact['artifactId']}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["content-disposition"].startswith('attachment; filename="summary.md"')
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.text == artifact["content"]


async def test_another_organizations_run_is_not_found(
    dashboard: Dashboard, client: httpx.AsyncClient, other_tenant: Tenant
) -> None:
    run_id, events = await finished_run(client, other_tenant, "hello #notools")
    artifact_free = [e for e in events if e["type"] == "artifact"]
    assert not artifact_free
    for response in (
        await dashboard.get(f"/runs/{run_id}"),
        await dashboard.get(f"/runs/{run_id}/events"),
        await dashboard.post(f"/runs/{run_id}/cancel"),
    ):
        assert response.status_code == 404 and "Not found" in response.text
    assert (await dashboard.get("/artifacts/art_00000000000000000000000000")).status_code == 404


async def test_a_structured_run_shows_its_format_and_its_answer_indented(
    dashboard: Dashboard, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    schema = {"type": "object", "properties": {"severity": {"enum": ["low"]}}, "required": ["severity"]}
    response_format = {"type": "json_schema", "name": "triage", "schema": schema}
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input="#notools disk", responseFormat=response_format)
    await wait_for_status(client, tenant, run["id"], "completed")
    body = (await dashboard.get(f"/runs/{run['id']}")).text
    assert "<dt>Answer format</dt><dd><code>triage</code></dd>" in body
    assert (
        "<summary>Answer as <code>triage</code></summary><pre>{\n  &#34;severity&#34;: &#34;low&#34;\n}</pre>"
        in body
    )
    plain_run, _events = await finished_run(client, tenant, "#notools hello")
    plain = (await dashboard.get(f"/runs/{plain_run}")).text
    assert "Answer format" not in plain and "structured-answer" not in plain
