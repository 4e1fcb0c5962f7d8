"""Automations in a real browser: a log-triggered automation made in the form fires on a matching error
log and its run completes on the automation's page; "Run now" starts a schedule's run."""

from __future__ import annotations

import asyncio
import re

import httpx
from playwright.async_api import Locator, Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in

_RUN_LINK = "#automation-runs td:first-child a"


async def test_a_log_trigger_fires_and_run_now_starts_a_run(page: Page, served: Served) -> None:
    await sign_in(page, served.url, served.email, served.password)
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Automations").click()
    await expect(page.get_by_role("heading", name="No automations yet")).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "automations-empty")

    await page.get_by_role("link", name="New automation").first.click()
    await expect(page.get_by_role("heading", name="New automation")).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "automations-new-schedule")
    await page.get_by_role("radio", name=re.compile("^Log records")).check()
    await expect(page.get_by_label("Cron", exact=True)).to_be_hidden()
    await page.get_by_label("Name", exact=True).fill("DB timeouts")
    await page.get_by_label("Message contains", exact=True).fill("timeout")
    await page.get_by_label("Cooldown (seconds)", exact=True).fill("soon")
    await page.get_by_role("button", name="Create automation").click()
    # The rules of the API, at the fields: the cooldown is no number and the prompt is missing.
    await expect(page.locator("#cooldown_seconds-error")).to_have_text(
        "Enter a whole number of seconds, like 300."
    )
    await expect(page.get_by_label("Prompt", exact=True)).to_have_attribute("aria-invalid", "true")
    await expect(page.get_by_label("Name", exact=True)).to_have_value("DB timeouts")
    await assert_accessible(page)
    await screenshot(page, "automations-new-errors")
    await page.get_by_label("Cooldown (seconds)", exact=True).fill("0")
    await page.get_by_label("Prompt", exact=True).fill("Find out why the database timed out.")
    await page.get_by_role("button", name="Create automation").click()
    await expect(page.get_by_role("heading", name="DB timeouts")).to_be_visible()
    await expect(page.get_by_text("error logs containing 'timeout'")).to_be_visible()

    async with httpx.AsyncClient() as intake:
        sent = await intake.post(
            served.intake_url + "/v1/logs",
            headers={"x-service-key": str(served.created["publicKey"])},
            json={"level": "error", "message": "db timeout after 30 s"},
        )
        assert sent.status_code in (200, 201, 202), sent.text
    await _reload_until(page, page.locator(_RUN_LINK))
    await expect(page.locator("#automation-runs .badge").first).to_have_text("completed", timeout=20_000)
    await expect(page.locator("#automation-runs tbody")).to_contain_text("log record")
    await assert_accessible(page)
    await screenshot(page, "automations-log-fired")

    await page.get_by_role("link", name="Automations").first.click()
    await page.get_by_role("link", name="New automation").click()
    await page.get_by_label("Name", exact=True).fill("Morning digest")
    await page.get_by_label("Cron", exact=True).fill("0 8 * * 1-5")
    await page.get_by_label("Time zone", exact=True).fill("Europe/Berlin")
    await page.get_by_label("Prompt", exact=True).fill("Summarise yesterday's errors.")
    await page.get_by_role("button", name="Create automation").click()
    await expect(page.get_by_text("weekdays at 08:00, Europe/Berlin")).to_be_visible()
    await page.get_by_role("button", name="Run now").click()
    await expect(page.get_by_role("status")).to_contain_text("Started run")
    await expect(page.locator(_RUN_LINK)).to_have_count(1)
    await expect(page.locator("#automation-runs tbody")).to_contain_text("Run now")
    await expect(page.locator("#automation-runs .badge").first).to_have_text("completed", timeout=20_000)
    await screenshot(page, "automations-run-now")

    await page.get_by_role("link", name="Automations").first.click()
    rows = page.locator("table.automations tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("weekdays at 08:00, Europe/Berlin")
    await expect(rows.nth(1)).to_contain_text("error logs containing 'timeout'")
    await assert_accessible(page)
    await screenshot(page, "automations-list")
    switch = rows.first.get_by_role("switch", name="Enabled")
    await expect(switch).to_have_attribute("aria-checked", "true")
    await switch.click()
    await expect(page.locator("table.automations tbody tr").first.get_by_role("switch")).to_have_attribute(
        "aria-checked", "false"
    )


async def _reload_until(page: Page, locator: Locator, seconds: float = 15) -> None:
    """Reloads the page until ``locator`` shows (the page also refreshes its runs by itself)."""
    async with asyncio.timeout(seconds):
        while await locator.count() == 0:
            await asyncio.sleep(0.5)
            await page.reload()
