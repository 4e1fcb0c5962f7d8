"""Signing in and out in a real browser."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in


async def test_sign_in_and_out(page: Page, served: Served) -> None:
    await page.goto(f"{served.url}/login")
    await assert_accessible(page)
    await screenshot(page, "login")
    await page.get_by_label("Email").fill(served.email)
    await page.get_by_label("Password").fill("not the password")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_have_text("The email or password is not right.")
    await sign_in(page, served.url, served.email, served.password)
    await expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url(f"{served.url}/login")
    await page.go_back()  # the page is not in the browser's cache (no-store): nothing of the session shows
    await expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    await expect(page.get_by_text(served.email)).to_have_count(0)
