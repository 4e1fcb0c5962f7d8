"""Browser journeys: Playwright driving Debian's Chromium (``/usr/bin/chromium``; Playwright's own browser
download cannot work here) against a real ``threadline serve`` of each storage shape.

One server (and, distributed, one worker) per shape serves every journey of this package (``shared``):
starting them takes seconds, more on a loaded machine. Each journey still starts from nothing of its own:
``served`` gives it an organization and an owner login nobody else has, and ``page`` a browser context of
its own (Chromium itself is started once for the package). Journeys that need a server set up differently
start their own (``serve``). The one thing they share is the client address, 127.0.0.1: sign-in and the
password asked again draw on one budget of 20 attempts a minute per address (``dashboard.passwords``), and
the journeys of one shape make 15 in all, so none is ever refused.

Without Chromium these tests are skipped, saying why, unless ``THREADLINE_TEST_REQUIRE_BROWSER=1`` (as
``.ci/run`` sets, after installing Chromium when it is missing): then they fail. Each journey writes
screenshots to ``tests/dashboard/screenshots/`` (git-ignored)."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright

from tests.conftest import Backend, empty_database
from tests.support import ServerProcess, init_database, running_server, running_worker
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.encryption import generate_key
from threadline.provisioning import create_organization
from threadline.users.service import create_owner, generate_password

CHROMIUM = Path(os.environ.get("THREADLINE_TEST_CHROMIUM", "/usr/bin/chromium"))
REQUIRE_BROWSER = os.environ.get("THREADLINE_TEST_REQUIRE_BROWSER") == "1"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"
# As the machine's own probe starts it: no sandbox as root, and no calls home (refused here, and slow).
_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CHROMIUM.exists() or REQUIRE_BROWSER:
        return
    skip = pytest.mark.skip(reason=f"browser tests need Chromium at {CHROMIUM} (apt-get install -y chromium)")
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(skip)


@dataclass
class Served:
    """A running ``threadline serve`` after ``threadline init``: its URLs, the owner's login and keys."""

    server: ServerProcess
    env: dict[str, str]
    created: dict[str, Any]

    @property
    def url(self) -> str:
        return self.server.api_url

    @property
    def intake_url(self) -> str:
        return self.server.intake_url

    @property
    def email(self) -> str:
        return str(self.created["owner"]["email"])

    @property
    def password(self) -> str:
        return str(self.created["owner"]["password"])

    @property
    def secret_key(self) -> str:
        return str(self.created["secretKey"])


def serve(empty_env: dict[str, str], **settings: str) -> Iterator[Served]:
    """``threadline init``, then ``threadline serve`` with these extra settings (environment variables).
    Runs execute in the server itself (embedded) or, as in production, in a ``threadline worker`` beside
    it (distributed: ``serve`` then executes none). Start-up may take a while on a loaded machine."""
    created = init_database(empty_env)
    env = {**empty_env, **settings}
    with ExitStack() as stack:
        server = stack.enter_context(running_server(env, startup_timeout=120))
        if env.get("THREADLINE_REDIS_URL"):
            stack.enter_context(running_worker(env, startup_timeout=120))
        yield Served(server, env, created)


@dataclass
class Shared:
    """The package's server of one shape: what it serves and the database behind it."""

    served: Served
    settings: Settings


@pytest.fixture(scope="package")
async def shared_database(backend: Backend, storage_root: Path) -> AsyncIterator[Settings]:
    async with empty_database(backend, storage_root) as settings:
        yield settings


@pytest.fixture(scope="package")
def shared(backend: Backend, shared_database: Settings) -> Iterator[Shared]:
    # MCP servers: the journeys' own peers listen on 127.0.0.1, and the distributed shape has no key file.
    mcp = {"THREADLINE_EGRESS_ALLOW": "127.0.0.1", "THREADLINE_ENCRYPTION_KEY": generate_key()}
    for served in serve(backend.env(shared_database), **mcp):
        yield Shared(served, shared_database)


@pytest.fixture
async def served(shared: Shared) -> Served:
    """The shared server, seen by an organization and an owner login of the journey's own (made as
    ``threadline init`` makes the first ones, straight in the database). The password is hashed here, with
    the tests' cheap hasher (tests/conftest.py); the server, which keeps the production one, verifies it at
    the cost recorded in the hash, so a journey's sign-ins cost it nothing either."""
    email, password = f"owner-{secrets.token_hex(4)}@localhost", generate_password()
    db = Database(shared.settings.resolved_database_url)
    try:
        async with db.transaction() as conn:
            new = await create_organization(conn, "default", now=Clock().now())
            await create_owner(conn, new.organization.id, email, password, now=Clock().now())
    finally:
        await db.dispose()
    created = {
        "organization": {"id": new.organization.id, "name": new.organization.name},
        "project": {"id": new.project.id, "name": new.project.name},
        "secretKey": new.secret_value,
        "publicKey": new.public_value,
        "owner": {"email": email, "password": password},
    }
    return Served(shared.served.server, shared.served.env, created)


@pytest.fixture(scope="package")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium for the package's journeys (not left idle beside the rest of the suite); each journey's
    ``page`` has a context (cookies, storage) of its own."""
    if not CHROMIUM.exists():  # noqa: ASYNC240 (one stat before the browser starts)
        pytest.fail(f"THREADLINE_TEST_REQUIRE_BROWSER=1 but there is no Chromium at {CHROMIUM}")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    opened = await context.new_page()
    try:
        yield opened
    finally:
        await context.close()


async def sign_in(page: Page, base_url: str, email: str, password: str) -> None:
    await page.goto(f"{base_url}/login")
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(re.compile(r"^(?!.*/login).*$"))


async def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


async def assert_accessible(page: Page) -> None:
    """axe-core finds no serious or critical violation on the page as it stands."""
    from axe_playwright_python.async_playwright import Axe

    results = await Axe().run(page)
    violations = [v for v in results.response["violations"] if v.get("impact") in ("serious", "critical")]
    assert not violations, [(v["id"], v["help"], [n["target"] for n in v["nodes"]][:3]) for v in violations]
