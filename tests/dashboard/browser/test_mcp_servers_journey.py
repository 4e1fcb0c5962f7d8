"""Settings > MCP servers in a real browser, against a real MCP server (the Python SDK's, on 127.0.0.1):
add one with a header entered once, see the header's name but never its value, see the server's tools
listed live, delete it; axe on each page."""

from __future__ import annotations

import re
import secrets

from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in
from tests.mcp_servers.peers import python_peer


async def test_mcp_servers(page: Page, served: Served) -> None:
    value = f"Bearer journey-{secrets.token_hex(8)}"
    with python_peer() as peer:
        await sign_in(page, served.url, served.email, served.password)
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="MCP servers").click()
        await expect(page).to_have_url(f"{served.url}/settings/mcp-servers")
        await expect(page.get_by_text("No MCP servers yet.")).to_be_visible()
        await assert_accessible(page)

        form = page.get_by_role("form", name="Add a server")
        await form.get_by_label("Name").fill("Orders")
        await form.get_by_label("URL").fill(f"{peer.base}/mcp")
        await form.get_by_label("Headers").fill(f"Authorization: {value}")
        await form.get_by_label("Timeout (seconds)").fill("5")
        await form.get_by_role("button", name="Add server").click()
        await expect(page.get_by_role("status")).to_contain_text("“Orders” is registered.")
        row = page.get_by_role("row", name=re.compile("Orders"))
        await expect(row).to_contain_text("Authorization")
        await expect(row).to_contain_text("Streamable HTTP")
        await expect(form.get_by_label("Headers")).to_have_value("")
        assert value not in await page.content()
        await assert_accessible(page)
        await screenshot(page, "mcp-servers")

        peer.seen_headers.clear()
        await row.get_by_role("link", name="Orders").click()
        tools = page.get_by_role("region", name="Tools")
        await expect(tools.get_by_role("row", name=re.compile(r"^add\b"))).to_contain_text(
            "Adds two integers."
        )
        await expect(tools.get_by_role("row", name=re.compile(r"^echo\b"))).to_contain_text("text")
        assert peer.seen_headers and all(h.get("authorization") == value for h in peer.seen_headers)
        assert value not in await page.content()
        await assert_accessible(page)
        await screenshot(page, "mcp-server-tools")

        await page.get_by_role("button", name="Delete server").click()
        await expect(page).to_have_url(f"{served.url}/settings/mcp-servers")
        await expect(page.get_by_text("No MCP servers yet.")).to_be_visible()
