"""Settings > API Keys, /settings and /projects in a real browser: a key's value shown once, a secret key
made and revoked with the password asked again (the API refuses it within a second), the settings form's
errors at their fields, and axe on every page (with the new key's dialog open too)."""

from __future__ import annotations

import re
import time

import httpx
from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, assert_accessible, screenshot, sign_in

KEY = re.compile(r"^(pk|sk)_[A-Za-z0-9]{40}$")


async def create_key(page: Page, name: str, key_type: str, password: str | None = None) -> None:
    form = page.get_by_role("form", name="Create a key")
    await form.get_by_label("Name").fill(name)
    await form.get_by_label("Type").select_option(key_type)
    if password is not None:
        await form.get_by_label("Password").fill(password)
    await form.get_by_role("button", name="Create key").click()


async def shown_key(page: Page) -> str:
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text("it will not be shown again")
    value = await dialog.get_by_role("textbox", name="New key").input_value()
    assert KEY.match(value), value
    return value


async def refused_within(url: str, value: str, seconds: float) -> float:
    """How long after now the API first refuses ``value``: fails past ``seconds``."""
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, timeout=5) as http:
        while True:
            response = await http.get("/v1/me", headers={"Authorization": f"Bearer {value}"})
            waited = time.monotonic() - started
            if response.status_code == 401:
                assert response.json()["reason"] == "KEY_REVOKED"
                return waited
            assert waited < seconds, f"the API still accepted the revoked key after {waited:.2f} s"


async def test_keys_settings_and_projects(page: Page, served: Served) -> None:
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.url)
    await sign_in(page, served.url, served.email, served.password)
    await page.get_by_role("link", name="API keys").click()
    await expect(page).to_have_url(f"{served.url}/settings/api-keys")
    await expect(page.get_by_role("row", name=re.compile("default public key"))).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "api-keys")

    # A public key: its value once, in the dialog, with Copy; never after a reload.
    await create_key(page, "Browser app", "public")
    value = await shown_key(page)
    assert value.startswith("pk_")
    await assert_accessible(page)
    await screenshot(page, "api-keys-new-key")
    copy = page.get_by_role("dialog").get_by_role("button", name="Copy")
    await copy.click()  # its "Copied" lasts 1.5 s, too short to wait for on a loaded machine
    assert await page.evaluate("navigator.clipboard.readText()") == value
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("dialog")).to_have_count(0)
    await expect(page.get_by_role("row", name=re.compile("Browser app"))).to_contain_text(f"pk_…{value[-4:]}")
    await page.reload()
    await expect(page.get_by_role("row", name=re.compile("Browser app"))).to_be_visible()
    assert value not in await page.content()
    await expect(page.get_by_role("textbox", name="New key")).to_have_count(0)

    # A secret key: the password asked again, refused when wrong, the key usable once made.
    await create_key(page, "Nightly job", "secret", "not my password")
    form = page.get_by_role("form", name="Create a key")
    await expect(form.get_by_label("Password")).to_have_attribute("aria-invalid", "true")
    await expect(form).to_contain_text("That is not your password.")
    await screenshot(page, "api-keys-wrong-password")
    await expect(page.get_by_role("row", name=re.compile("Nightly job"))).to_have_count(0)
    await form.get_by_label("Password").fill(served.password)
    await form.get_by_role("button", name="Create key").click()
    secret = await shown_key(page)
    assert secret.startswith("sk_")
    await page.get_by_role("dialog").get_by_role("button", name="Done").click()
    async with httpx.AsyncClient(base_url=served.url) as http:
        assert (await http.get("/v1/me", headers={"Authorization": f"Bearer {secret}"})).status_code == 200

    # Revoking it: confirmation with the password again; the API refuses it within a second.
    row = page.get_by_role("row", name=re.compile("Nightly job"))
    await row.get_by_role("button", name="Revoke").click()
    confirm = page.get_by_role("dialog", name=re.compile("Revoke “Nightly job”"))
    await expect(confirm).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "api-keys-revoke")
    await confirm.get_by_label("Password").fill("wrong again")
    await confirm.get_by_role("button", name="Revoke key").click()
    confirm = page.get_by_role("dialog", name=re.compile("Revoke “Nightly job”"))
    await expect(confirm).to_contain_text("That is not your password.")
    async with httpx.AsyncClient(base_url=served.url) as http:
        assert (await http.get("/v1/me", headers={"Authorization": f"Bearer {secret}"})).status_code == 200
    await confirm.get_by_label("Password").fill(served.password)
    await confirm.get_by_role("button", name="Revoke key").click()
    await expect(page.get_by_role("status")).to_contain_text("is revoked")
    await refused_within(served.url, secret, 1.0)
    await expect(page.get_by_role("row", name=re.compile("Nightly job"))).to_contain_text("revoked")
    await screenshot(page, "api-keys-revoked")

    # Settings: saved, then a bad value refused at its field.
    await page.get_by_role("link", name="Settings", exact=True).click()
    await expect(page).to_have_url(f"{served.url}/settings")
    await assert_accessible(page)
    await screenshot(page, "settings")
    await page.get_by_label("Log retention (days)").fill("45")
    await page.get_by_label("Instructions").fill("Answer in one sentence.")
    await page.get_by_role("button", name="Save settings").click()
    await expect(page.get_by_role("status")).to_have_text("Settings saved.")
    await expect(page.get_by_label("Log retention (days)")).to_have_value("45")
    await page.get_by_label("Log retention (days)").fill("0")
    await page.get_by_label("Allowed origins").fill("https://app.example.com/path")
    await page.get_by_role("button", name="Save settings").click()
    await expect(page.get_by_label("Log retention (days)")).to_have_attribute("aria-invalid", "true")
    await expect(page.locator("#log_retention_days-error")).to_have_text(
        "Input should be greater than or equal to 1."
    )
    await expect(page.locator("#allowed_origins-error")).to_contain_text("is not an origin")
    await assert_accessible(page)
    await screenshot(page, "settings-errors")
    async with httpx.AsyncClient(base_url=served.url) as http:
        current = await http.get("/v1/settings", headers={"Authorization": f"Bearer {served.secret_key}"})
    assert current.json()["logRetentionDays"] == 45

    # Projects: made from the form, then offered for public keys.
    await page.get_by_role("link", name="Projects").click()
    await page.get_by_label("Name").fill("Mobile app")
    await page.get_by_role("button", name="Create project").click()
    await expect(page.get_by_role("status")).to_contain_text("Project “Mobile app” created.")
    await expect(page.get_by_role("row", name=re.compile("Mobile app"))).to_be_visible()
    await assert_accessible(page)
    await screenshot(page, "projects")
    await page.get_by_role("link", name="API keys").click()
    project = page.get_by_role("form", name="Create a key").get_by_label("Project")
    await expect(project.locator("option", has_text="Mobile app")).to_have_count(1)
