"""Journey 3: a run started from a thread page, watched live, the page reloaded mid-run (the view resumes
with no text twice or lost), a run cancelled; a finished run's replay; axe on the threads, run and search
pages."""

from __future__ import annotations

import json
from typing import Any

import httpx
from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in

SLOW = "hello #delay=200 #chunks=50"


def api(served: Served, method: str, path: str, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {served.secret_key}"}
    response = httpx.request(method, f"{served.url}/v1{path}", headers=headers, timeout=30, **kwargs)
    assert response.status_code < 300, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        return response.text
    return response.json()


def streamed_text(served: Served, run_id: str) -> str:
    """The run's answer as its events tell it (the API's stream of a run that has ended)."""
    body = api(served, "GET", f"/runs/{run_id}/stream")
    events = [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]
    answer = [e for e in events if e["type"] == "message_started"][-1]["messageId"]
    return "".join(e["delta"] for e in events if e["type"] == "text_chunk" and e["messageId"] == answer)


async def answer_on_screen(page: Page) -> str:
    return await page.locator("#run-log .ev.turn .text").last.inner_text()


async def test_watch_reload_complete_cancel_and_replay(page: Page, served: Served) -> None:
    thread = api(served, "POST", "/threads", json={"title": "Checkout <script>alert(1)</script> incident"})
    await sign_in(page, served.url, served.email, served.password)
    await page.goto(f"{served.url}/threads")
    await expect(page.get_by_role("link", name="Checkout <script>alert(1)</script> incident")).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "threads")

    await page.get_by_role("link", name="Checkout <script>alert(1)</script> incident").click()
    await page.get_by_label("Message").fill(SLOW)
    await page.get_by_role("button", name="Start run").click()
    log = page.get_by_role("log", name="Run events")
    await expect(log).to_be_visible()
    answer = page.locator("#run-log .ev.turn .text").last
    await expect(answer).to_contain_text("word2 ", timeout=60_000)  # #chunks=50: word1 … word50.
    words = len((await answer_on_screen(page)).split())
    await expect(page.get_by_role("button", name="Cancel run")).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "thread-live")

    await page.reload()  # mid-run: the persisted events, then the stream from the last of them
    await expect(page.locator("#run-log .ev.turn .text").last).not_to_have_text("")
    run_id = (await page.locator("#run-view-title a code").inner_text()).strip()
    await expect(page.locator("#run-status")).to_have_text("completed", timeout=60_000)
    await expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    sidebar = page.locator(f'[data-run-badge="{run_id}"]')  # the thread's list of runs follows the view
    await expect(sidebar).to_have_text("completed")
    await expect(sidebar).to_have_class("badge completed")
    final = await answer_on_screen(page)
    assert len(final.split()) > words
    assert final == streamed_text(served, run_id)  # nothing twice, nothing lost
    await screenshot(page, "thread-completed")

    await page.goto(f"{served.url}/runs/{run_id}")  # the replay of the finished run
    await expect(page.locator("#run-status")).to_have_text("completed")
    assert await answer_on_screen(page) == streamed_text(served, run_id)
    await expect(page.get_by_text("Tool call search_messages")).to_be_visible()
    await expect(page.locator("#run-usage")).to_contain_text("output tokens")
    await assert_accessible(page)
    await screenshot(page, "run-replay")

    run = api(served, "POST", f"/threads/{thread['id']}/runs", json={"input": SLOW})
    await page.goto(f"{served.url}/runs/{run['id']}")
    await expect(page.locator("#run-log .ev.turn .text").last).to_contain_text("word2 ", timeout=60_000)
    await screenshot(page, "run-live")
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Cancel run").click()
    await expect(page.locator("#run-status")).to_have_text("cancelled")
    assert api(served, "GET", f"/runs/{run['id']}")["status"] == "cancelled"
    assert await answer_on_screen(page) == streamed_text(served, run["id"])

    message = {"content": "the <script>x</script> deploy"}
    api(served, "POST", f"/threads/{thread['id']}/messages", json=message)
    await page.goto(f"{served.url}/search?q=deploy")
    await expect(page.locator("mark").first).to_have_text("deploy", timeout=10_000)
    await assert_accessible(page)
    await screenshot(page, "search")


async def test_a_long_live_run_keeps_every_event(page: Page, served: Served) -> None:
    """10,000 text chunks watched live from the start: each batch of events costs the browser only its
    own fragment, so the view keeps up and shows the whole text exactly once."""
    thread = api(served, "POST", "/threads", json={"title": "Long answer"})
    await sign_in(page, served.url, served.email, served.password)
    body = {"input": "long #notools #chunks=10000 #delay=1"}
    run = api(served, "POST", f"/threads/{thread['id']}/runs", json=body)
    await page.goto(f"{served.url}/runs/{run['id']}")
    await expect(page.locator("#run-status")).to_have_text("completed", timeout=120_000)
    final = await answer_on_screen(page)
    assert final == streamed_text(served, run["id"])
    assert final.split()[-1] == "word10000."
