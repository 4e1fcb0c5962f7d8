"""The live log view in a real browser: a log sent to the intake appears within a second; "Pause" holds and
counts what arrives; resuming shows all of it once. And axe on the overview, logs and billing pages."""

from __future__ import annotations

import time

import httpx
from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in
from tests.support import threadline


async def send(served: Served, http: httpx.AsyncClient, message: str, **fields: object) -> None:
    response = await http.post(
        served.intake_url + "/v1/logs",
        json={"message": message, **fields},
        headers={"x-service-key": served.created["publicKey"]},
    )
    assert response.status_code == 202, response.text


async def test_live_tail_pause_and_resume(page: Page, served: Served) -> None:
    await sign_in(page, served.url, served.email, served.password)
    async with httpx.AsyncClient(timeout=10) as http:
        await send(served, http, "service started", attributes={"version": "1.4.2", "region": "eu-west-1"})
        await send(served, http, "cache miss ratio high", level="warn", attributes={"ratio": 0.42})
        await page.goto(f"{served.url}/logs")
        records = page.get_by_role("log", name="Log records")
        await expect(records.locator("li")).to_have_count(2)
        live = page.get_by_role("button", name="Live")
        pause = page.get_by_role("button", name="Pause")
        await live.click()
        await expect(live).to_have_attribute("aria-pressed", "true")
        await expect(page.get_by_role("status")).to_contain_text("Live")

        sent = time.monotonic()
        await send(
            served, http, "payment <b>failed</b>", level="error", attributes={"order": "<script>x</script>"}
        )
        await expect(records.locator("li").first).to_contain_text("payment <b>failed</b>", timeout=1000)
        assert time.monotonic() - sent < 1.0

        await pause.click()
        await expect(pause).to_have_attribute("aria-pressed", "true")
        for n in range(3):
            await send(served, http, f"while paused {n}")
        await expect(page.get_by_role("status")).to_contain_text("3 new")
        await expect(records.get_by_text("while paused")).to_have_count(0)
        await screenshot(page, "logs-paused")

        await pause.click()
        await expect(records.locator("li")).to_have_count(6)
        texts = await records.locator("summary .text").all_inner_texts()
        assert texts == [
            "while paused 2",
            "while paused 1",
            "while paused 0",
            "payment <b>failed</b>",
            "cache miss ratio high",
            "service started",
        ]
        await records.locator("summary").nth(3).click()
        await expect(records.locator("li").nth(3).locator("pre").nth(1)).to_contain_text(
            '"order": "<script>x</script>"'
        )
        await assert_accessible(page)
        await screenshot(page, "logs-live")

        await page.goto(f"{served.url}/logs?level=warn&q=ratio")
        await expect(records.locator("li")).to_have_count(1)
        await page.goto(f"{served.url}/logs?level=loud")
        await expect(page.get_by_text("Level: input should be")).to_be_visible()
        await assert_accessible(page)
        await screenshot(page, "logs-bad-filter")

    organization_id = served.created["organization"]["id"]
    threadline(
        "billing", "grant", organization_id, "5000", "--description", "Welcome credits", env=served.env
    )
    await page.goto(f"{served.url}/")
    await expect(page.get_by_role("link", name="payment <b>failed</b>")).to_be_visible()
    await expect(page.locator(".card", has_text="Balance")).to_contain_text("5,000")
    await assert_accessible(page)
    await screenshot(page, "overview")
    await page.get_by_role("link", name="Billing").click()
    await expect(page.get_by_role("cell", name="Welcome credits")).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "billing")
