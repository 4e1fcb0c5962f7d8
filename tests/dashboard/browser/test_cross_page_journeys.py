"""The dashboard issue's journeys that cross pages, in a real browser: a public key made on the keys page
carries a log into the live view (1); a log-triggered automation made in the form fires, and its run is
watched live to its end and its answer read in the thread (2); a person of another organization reaches
none of the first one's pages or data by URL (5)."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
from playwright.async_api import Browser, Page, expect

from tests.dashboard.browser.conftest import Served, screenshot, sign_in
from tests.dashboard.browser.test_keys_journey import create_key, shown_key
from tests.dashboard.browser.test_runs_journey import api, streamed_text
from tests.support import threadline


async def test_a_key_made_on_the_keys_page_carries_a_log_into_the_live_view(
    page: Page, served: Served
) -> None:
    await sign_in(page, served.url, served.email, served.password)
    await page.get_by_role("link", name="API keys").click()
    await create_key(page, "Checkout web app", "public")
    value = await shown_key(page)
    await page.reload()
    assert value not in await page.content()

    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Logs").click()
    live = page.get_by_role("button", name="Live")
    await live.click()
    await expect(live).to_have_attribute("aria-pressed", "true")
    await expect(page.get_by_role("status")).to_contain_text("Live")
    async with httpx.AsyncClient(timeout=10) as http:
        sent = await http.post(
            f"{served.intake_url}/v1/logs",
            headers={"x-service-key": value},
            json={"level": "error", "message": "card declined <b>twice</b>"},
        )
        assert sent.status_code == 202, sent.text
    arrived = time.monotonic()
    records = page.get_by_role("log", name="Log records")
    await expect(records.locator("summary").get_by_text("card declined <b>twice</b>")).to_be_visible(
        timeout=1_000
    )
    assert time.monotonic() - arrived < 1.0
    await screenshot(page, "journey-key-to-live-log")


async def test_an_automation_fires_and_its_run_is_watched_live_to_its_answer(
    page: Page, served: Served
) -> None:
    await sign_in(page, served.url, served.email, served.password)
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Automations").click()
    await page.get_by_role("link", name="New automation").first.click()
    await page.get_by_role("radio", name=re.compile("^Log records")).check()
    await page.get_by_label("Name", exact=True).fill("Payment errors")
    await page.get_by_label("Message contains", exact=True).fill("declined")
    await page.get_by_label("Cooldown (seconds)", exact=True).fill("0")
    # A slow answer (the offline model's directives): about five seconds to watch arrive.
    await page.get_by_label("Prompt", exact=True).fill("Look into the payment error #delay=250 #chunks=20")
    await page.get_by_role("button", name="Create automation").click()
    await expect(page.get_by_role("heading", name="Payment errors")).to_be_visible()

    async with httpx.AsyncClient(timeout=10) as http:
        sent = await http.post(
            f"{served.intake_url}/v1/logs",
            headers={"x-service-key": str(served.created["publicKey"])},
            json={"level": "error", "message": "card declined"},
        )
        assert sent.status_code == 202, sent.text
    run_link = page.locator("#automation-runs td:first-child a").first
    deadline = time.monotonic() + 20
    while not await run_link.count():
        assert time.monotonic() < deadline, "the automation's run never showed on its page"
        await asyncio.sleep(0.5)
        await page.reload()
    await run_link.click()
    await expect(page).to_have_url(re.compile(r"/runs/run_"))
    run_id = page.url.rsplit("/", 1)[1]
    view = page.get_by_role("log", name="Run events")
    await expect(view).to_be_visible()
    # Live: the text grows on this page without a reload, and the status ends completed.
    text = view.locator(".ev.turn .text").last
    await expect(text).not_to_be_empty(timeout=15_000)
    seen_while_running = await text.inner_text()
    await expect(page.locator(".run-view .badge").first).to_have_text("completed", timeout=30_000)
    answer = streamed_text(served, run_id)
    await expect(text).to_have_text(answer)
    assert len(seen_while_running) < len(answer)  # it was watched arriving, not loaded at the end
    await screenshot(page, "journey-automation-run-live")

    run = api(served, "GET", f"/runs/{run_id}")
    await page.goto(f"{served.url}/threads/{run['threadId']}")
    await expect(page.locator(".timeline .message.assistant").last).to_contain_text(answer[:40])


async def test_another_organization_reaches_nothing_by_url(
    browser: Browser, page: Page, served: Served
) -> None:
    thread = api(served, "POST", "/threads", json={"title": "Acme's private thread"})
    run = api(served, "POST", f"/threads/{thread['id']}/runs", json={"input": "hello"})
    automation = api(
        served,
        "POST",
        "/automations",
        json={
            "name": "Acme nightly",
            "trigger": {"type": "schedule", "cron": "0 3 * * *", "timezone": "UTC"},
            "action": {"prompt": "Summarise the night."},
        },
    )
    async with httpx.AsyncClient(timeout=10) as http:
        await http.post(
            f"{served.intake_url}/v1/logs",
            headers={"x-service-key": str(served.created["publicKey"])},
            json={"message": "acme secret log line"},
        )
    [record] = api(served, "GET", "/logs", params={"q": "secret"})["data"]
    other = json.loads(threadline("orgs", "create", "Globex", "--json", env=served.env).stdout)
    login = json.loads(
        threadline(
            "users", "create", "--org", other["organization"]["id"], "--email", "hank@globex.test", "--json",
            env=served.env,
        ).stdout
    )  # fmt: skip

    await sign_in(page, served.url, login["email"], login["password"])
    for path in (
        f"/threads/{thread['id']}",
        f"/runs/{run['id']}",
        f"/automations/{automation['id']}",
        f"/logs/{record['id']}",
    ):
        response = await page.goto(f"{served.url}{path}")
        assert response is not None and response.status == 404, path
        await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    for path, hidden in (
        ("/threads", "Acme's private thread"),
        ("/automations", "Acme nightly"),
        ("/logs", "acme secret log line"),
        ("/settings/api-keys", f"pk_…{str(served.created['publicKey'])[-4:]}"),
        ("/settings/api-keys", f"sk_…{served.secret_key[-4:]}"),
    ):
        await page.goto(f"{served.url}{path}")
        await expect(page.get_by_text(hidden)).to_have_count(0)
    await expect(page.get_by_role("cell", name=f"pk_…{str(other['publicKey'])[-4:]}")).to_be_visible()
    await screenshot(page, "journey-other-organization")
