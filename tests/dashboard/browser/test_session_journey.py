"""Journey 6 of the dashboard issue in a real browser: a state change without the CSRF token is refused;
after sign-out the pages send the browser to sign in and the back button shows no data; an expired
session sends it to sign in."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, screenshot, serve, sign_in

PAGE = "/settings/api-keys"
# Six seconds without a request end a session of this server: long enough to sign in on a busy machine.
IDLE_MINUTES = "0.1"


@pytest.fixture
def served_briefly(empty_env: dict[str, str]) -> Iterator[Served]:
    """A server whose sessions end after a short idle time."""
    yield from serve(empty_env, THREADLINE_DASHBOARD_IDLE_MINUTES=IDLE_MINUTES)


async def test_refused_without_token_and_nothing_left_after_sign_out(page: Page, served: Served) -> None:
    await sign_in(page, served.url, served.email, served.password)
    await page.goto(f"{served.url}{PAGE}")
    await expect(page.get_by_role("navigation", name="Main")).to_be_visible()

    # The browser's own cookie rides along, as it would on a forged cross-site form: no token, no change.
    forged = await page.request.post(f"{served.url}/logout", form={"next": "/"}, max_redirects=0)
    assert forged.status == 403
    assert "reload the page" in await forged.text()
    foreign = await page.request.post(
        f"{served.url}/logout", form={}, headers={"Origin": "https://evil.test"}, max_redirects=0
    )
    assert foreign.status == 403
    await page.reload()
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()  # still signed in

    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url(f"{served.url}/login")
    await page.go_back()
    await expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    await expect(page.get_by_text(served.email)).to_have_count(0)
    await page.goto(f"{served.url}{PAGE}")
    assert page.url == f"{served.url}/login?next={PAGE}"
    await expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    await screenshot(page, "session-signed-out")


async def test_an_expired_session_sends_the_browser_to_sign_in(page: Page, served_briefly: Served) -> None:
    served = served_briefly
    await sign_in(page, served.url, served.email, served.password)
    await page.goto(f"{served.url}{PAGE}")
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await asyncio.sleep(float(IDLE_MINUTES) * 60 + 0.5)  # the idle time itself is what is tested
    await page.reload()
    await page.wait_for_url(re.compile(r"/login\?next=/settings/api-keys$"))
    await expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    await screenshot(page, "session-expired")
    await page.get_by_label("Email").fill(served.email)  # signing in again leads back to the page
    await page.get_by_label("Password").fill(served.password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(f"{served.url}{PAGE}")
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
