"""Settings > Webhooks in a real browser, against a real receiver on 127.0.0.1: add an endpoint and copy its
secret (shown once), send a test event, see the failed first attempt with its response code and next
attempt, then its retry succeed, resend it, verify what arrived with standardwebhooks, delete; axe on
each page."""

from __future__ import annotations

import asyncio
import re

from playwright.async_api import Locator, Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in
from tests.webhooks.receiver import receiving, verified


async def shown_after_reloads(page: Page, rows: Locator) -> None:
    """Attempts are made and recorded in the background: the page shows them once reloaded after that."""
    for _ in range(100):
        if await rows.count():
            return
        await page.wait_for_timeout(100)
        await page.reload()
    raise AssertionError("the delivery never showed")


async def test_webhooks(page: Page, served: Served) -> None:
    with receiving() as receiver:
        receiver.statuses["/hooks"] = [500]
        await sign_in(page, served.url, served.email, served.password)
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Webhooks").click()
        await expect(page).to_have_url(f"{served.url}/settings/webhooks")
        await expect(page.get_by_text("No webhooks yet.")).to_be_visible()
        await assert_accessible(page)

        form = page.get_by_role("form", name="Add an endpoint")
        await form.get_by_label("URL").fill(f"{receiver.url}/hooks")
        await form.get_by_label("Description").fill("Orders")
        await form.get_by_role("button", name="Add endpoint").click()
        await expect(page.get_by_role("status")).to_contain_text("Copy its signing secret now")
        secret = (await page.locator("#webhook-secret").inner_text()).strip()
        assert re.fullmatch(r"whsec_[A-Za-z0-9+/=]{32}", secret)
        row = page.get_by_role("row", name=re.compile("hooks"))
        await expect(row).to_contain_text("Orders")
        await assert_accessible(page)
        await screenshot(page, "webhooks")

        await page.goto(f"{served.url}/settings/webhooks")
        assert secret not in await page.content()  # shown once: never on a page again
        await page.get_by_role("row", name=re.compile("hooks")).get_by_role("link").click()
        await page.get_by_role("button", name="Send test event").click()
        deliveries = page.get_by_role("region", name="Deliveries")
        failed = deliveries.get_by_role("row", name=re.compile("webhook.test")).filter(has_text="failed")
        await shown_after_reloads(page, failed)
        await expect(failed).to_contain_text("500")
        await expect(failed.locator("time").first).to_be_visible()  # its next attempt
        await assert_accessible(page)
        await screenshot(page, "webhook-deliveries")

        received = await asyncio.to_thread(receiver.wait_for, "/hooks", 2, 20)  # the retry, ~5 s later
        assert [verified(secret, r)["type"] for r in received] == ["webhook.test"] * 2
        succeeded = deliveries.get_by_role("row", name=re.compile("webhook.test")).filter(
            has_text="succeeded"
        )
        # Received is not yet recorded: the dispatcher writes the answer after the receiver has it.
        await shown_after_reloads(page, succeeded)
        await expect(succeeded).to_contain_text("200")
        await succeeded.get_by_role("button", name=re.compile("Resend")).click()
        resent = await asyncio.to_thread(receiver.wait_for, "/hooks", 3)
        assert resent[2].headers["webhook-id"] == resent[0].headers["webhook-id"]
        assert verified(secret, resent[2])["type"] == "webhook.test"

        await page.get_by_role("button", name="Delete endpoint").click()
        await expect(page).to_have_url(f"{served.url}/settings/webhooks")
        await expect(page.get_by_text("No webhooks yet.")).to_be_visible()
