"""The charts in a real browser: drawn from the page's first response (no script of theirs, nothing the
policy refuses), named for screen readers, their numbers in a table, and following the logs' filters."""

from __future__ import annotations

import httpx
from playwright.async_api import ConsoleMessage, Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in
from tests.support import threadline


async def test_charts_on_logs_overview_and_billing(page: Page, served: Served) -> None:
    refused: list[str] = []

    def watch(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            refused.append(message.text)

    page.on("console", watch)
    await sign_in(page, served.url, served.email, served.password)
    levels = ["info"] * 6 + ["warn"] * 3 + ["error"] * 2
    async with httpx.AsyncClient(timeout=10) as http:
        records = [{"message": f"request {n} handled", "level": level} for n, level in enumerate(levels)]
        answer = await http.post(
            served.intake_url + "/v1/logs",
            json=records,
            headers={"x-service-key": served.created["publicKey"]},
        )
        assert answer.status_code == 202, answer.text

    await page.goto(f"{served.url}/logs")
    chart = page.get_by_role("img", name="Log records by level, the last 24 hours")
    await expect(chart).to_be_visible()
    await expect(chart.locator("rect")).to_have_count(3)  # this hour's info, warn and error
    figure = page.locator("#volume-chart")
    await expect(figure.locator("desc")).to_contain_text("11 records in all")
    await figure.get_by_text("The numbers").click()
    last_row = figure.locator("tbody tr").last
    await expect(last_row.locator("td")).to_have_text(["0", "0", "6", "3", "2", "0"])
    await assert_accessible(page)
    await screenshot(page, "charts-logs")

    await page.goto(f"{served.url}/logs?level=error")
    await expect(page.locator("#volume-chart desc")).to_contain_text("2 records in all")
    await expect(page.locator("#volume-chart rect")).to_have_count(1)

    organization_id = served.created["organization"]["id"]
    threadline(
        "billing", "grant", organization_id, "2500", "--description", "Welcome credits", env=served.env
    )
    await page.goto(f"{served.url}/")
    await expect(page.get_by_role("img", name="Runs by status, per hour")).to_be_visible()
    await expect(page.get_by_role("img", name="Tokens per hour", exact=False)).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "charts-overview")

    await page.goto(f"{served.url}/billing")
    credits = page.get_by_role("img", name="Credits: the balance at the end of each day, last 30 days")
    await expect(credits).to_be_visible()
    await expect(page.locator("#credits-chart desc")).to_contain_text("to 2,500 credits")
    await assert_accessible(page)
    await screenshot(page, "charts-billing")
    assert not refused, refused
