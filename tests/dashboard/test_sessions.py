"""The session rules of docs/dashboard.md: timeouts, a new id at every sign-in, sessions ending with a
password change, throttled sign-in, the https cookie, ``next`` kept on our own site, the viewer's
organization, and the housekeeping sweep."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from tests.conftest import Backend
from tests.dashboard.support import Dashboard, Member, csrf_in
from tests.support import threadline
from threadline.chores import Chores
from threadline.config import Settings
from threadline.dashboard.passwords import ATTEMPTS_PER_ACCOUNT, ATTEMPTS_PER_ADDRESS
from threadline.dashboard.sessions import (
    SessionSweeper,
    find_session,
    hash_session_id,
    lifetimes,
    open_session,
)
from threadline.dashboard.tables import dashboard_sessions
from threadline.kit.clock import ManualClock
from threadline.runtime import Services

COOKIE = "threadline_session"
START = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)
PAGE = "/settings/api-keys"


@pytest.fixture
def clock(services: Services) -> ManualClock:
    """The clock the dashboard reads session times from, moved by the test."""
    manual = ManualClock(START)
    services.clock = manual
    return manual


async def client_at(
    app: FastAPI, base_url: str = "http://testserver", address: str = "127.0.0.1"
) -> Dashboard:
    transport = httpx.ASGITransport(app=app, client=(address, 50000))
    return Dashboard(httpx.AsyncClient(transport=transport, base_url=base_url))


@pytest.fixture
async def https(app: FastAPI) -> AsyncIterator[Dashboard]:
    browser = await client_at(app, base_url="https://testserver")
    async with browser.http:
        yield browser


async def attempt(browser: Dashboard, email: str, password: str, **form: str) -> httpx.Response:
    """One sign-in through the form, as a browser submits it."""
    page = await browser.http.get("/login")
    data = {"email": email, "password": password, "csrf_token": csrf_in(page.text), **form}
    return await browser.http.post("/login", data=data)


def plant(browser: Dashboard, raw: str) -> None:
    """The browser's session cookie set to ``raw``, replacing the one it holds (httpx keeps cookies of a
    host without a dot under ``.local``)."""
    browser.http.cookies.delete(COOKIE)
    browser.http.cookies.set(COOKIE, raw, domain="testserver.local")


def signed_out(response: httpx.Response) -> bool:
    return response.status_code == 303 and response.headers["location"].startswith("/login")


class TestTimeouts:
    async def test_an_idle_session_ends_after_the_idle_timeout(
        self, clock: ManualClock, dashboard: Dashboard
    ) -> None:
        clock.advance(29 * 60)
        assert (await dashboard.get(PAGE)).status_code == 200  # each request restarts the idle time
        clock.advance(29 * 60)
        assert (await dashboard.get(PAGE)).status_code == 200
        clock.advance(30 * 60)
        response = await dashboard.get(PAGE)
        assert signed_out(response) and response.headers["location"] == f"/login?next={PAGE}"

    async def test_a_busy_session_still_ends_after_the_absolute_timeout(
        self, clock: ManualClock, dashboard: Dashboard
    ) -> None:
        while clock.now() < START + timedelta(hours=12) - timedelta(minutes=20):
            assert (await dashboard.get(PAGE)).status_code == 200, clock.now()
            clock.advance(20 * 60)
        clock.set(START + timedelta(hours=12))
        assert signed_out(await dashboard.get(PAGE))

    async def test_an_htmx_request_of_an_expired_session_is_sent_to_sign_in(
        self, clock: ManualClock, dashboard: Dashboard
    ) -> None:
        clock.advance(31 * 60)
        response = await dashboard.get(PAGE, headers={"HX-Request": "true"})
        assert response.status_code == 204 and response.headers["hx-redirect"].startswith("/login")


class TestNewSessionAtSignIn:
    async def test_every_sign_in_gets_a_new_id_and_ends_the_one_the_browser_held(
        self, anonymous: Dashboard, member: Member
    ) -> None:
        planted = "attacker-chosen-value"
        plant(anonymous, planted)
        assert (await attempt(anonymous, member.email, member.password)).status_code == 303
        first = anonymous.http.cookies[COOKIE]
        assert first != planted
        assert (await anonymous.get(PAGE)).status_code == 200

        anonymous.http.cookies.delete(COOKIE)  # to reach the form, which a signed-in browser skips
        form = await anonymous.http.get("/login")
        plant(anonymous, first)
        again = await anonymous.http.post(
            "/login",
            data={"email": member.email, "password": member.password, "csrf_token": csrf_in(form.text)},
        )
        assert again.status_code == 303
        second = anonymous.http.cookies[COOKIE]
        assert second != first
        assert (await anonymous.get(PAGE)).status_code == 200
        plant(anonymous, first)
        assert signed_out(await anonymous.get(PAGE))  # the session from before the sign-in is gone

    async def test_set_password_ends_the_users_sessions(
        self, backend: Backend, settings: Settings, dashboard: Dashboard, member: Member
    ) -> None:
        assert (await dashboard.get(PAGE)).status_code == 200
        env = backend.env(settings)  # the operator's command, beside the running app (its loop keeps going)
        changed = await asyncio.to_thread(
            threadline, "users", "set-password", member.email, "--json", env=env
        )
        assert '"sessionsEnded": 1' in changed.stdout
        assert signed_out(await dashboard.get(PAGE))
        assert (await attempt(dashboard, member.email, member.password)).status_code == 400


class TestThrottling:
    """Buckets refill continuously (a minute's budget at once, then one attempt per 60/limit seconds). The
    attempts leave the password empty: they count all the same, and skip an argon2id hash that on a busy
    machine takes long enough to refill the bucket as fast as the test empties it. Attempts go on until
    refused, which must come after the budget and before twice it."""

    TOO_MANY = "Too many sign-in attempts. Try again in"

    async def until_refused(
        self, app: FastAPI, budget: int, email: str, address: str | None
    ) -> httpx.Response:
        for n in range(2 * budget):
            browser = await client_at(app, address=address or f"198.51.100.{n}")
            async with browser.http:
                response = await attempt(browser, email.format(n=n), "")
            if response.status_code == 429:
                assert n >= budget, f"refused after {n} attempts"
                assert self.TOO_MANY in response.text
                return response
            assert response.status_code == 400
        raise AssertionError(f"{2 * budget} failed sign-ins and none refused")

    async def test_per_client_address(self, app: FastAPI, member: Member) -> None:
        await self.until_refused(app, ATTEMPTS_PER_ADDRESS, "nobody-{n}@acme.test", "203.0.113.7")
        browser = await client_at(app, address="203.0.113.7")
        async with browser.http:
            throttled = await attempt(browser, member.email, member.password)  # even the right password
            assert throttled.status_code == 429 and COOKIE not in browser.http.cookies
        elsewhere = await client_at(app, address="203.0.113.8")
        async with elsewhere.http:
            assert (await attempt(elsewhere, member.email, member.password)).status_code == 303

    async def test_per_account_without_telling_whether_it_exists(self, app: FastAPI, member: Member) -> None:
        """Each attempt from another address, as a botnet would: the account's own bucket refuses."""
        answers = []
        for email in (member.email, "nobody@acme.test"):
            throttled = await self.until_refused(app, ATTEMPTS_PER_ACCOUNT, email, None)
            page = throttled.text.replace(email, "EMAIL").split("csrf_token")[0]
            answers.append(re.sub(r"in \d+ seconds", "in N seconds", page))
        assert answers[0] == answers[1]

    async def test_a_full_account_bucket_does_not_lock_its_owner_out(
        self, app: FastAPI, member: Member
    ) -> None:
        """Anyone may empty an account's bucket (ten guesses from anywhere): its owner, from an address
        whose bucket allows it, still signs in with the right password; a wrong one is still refused."""
        await self.until_refused(app, ATTEMPTS_PER_ACCOUNT, member.email, None)
        owner = await client_at(app, address="192.0.2.10")
        async with owner.http:
            wrong = await attempt(owner, member.email, "not the password")
            assert wrong.status_code == 429 and self.TOO_MANY in wrong.text
            right = await attempt(owner, member.email, member.password)
            assert right.status_code == 303 and COOKIE in owner.http.cookies


class TestCookie:
    async def test_over_https_the_cookie_is_host_prefixed_and_secure(
        self, https: Dashboard, member: Member
    ) -> None:
        response = await attempt(https, member.email, member.password)
        assert response.status_code == 303
        cookie = next(c for c in response.headers.get_list("set-cookie") if "session" in c)
        assert cookie.startswith("__Host-threadline_session=")
        assert "Secure" in cookie and "HttpOnly" in cookie and "Path=/" in cookie and "Domain" not in cookie
        assert (await https.get(PAGE)).status_code == 200
        signed_in = await https.http.get("/login?next=/x")  # a signed-in browser is sent on
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/x"


class TestNext:
    @pytest.mark.parametrize(
        "target",
        ["//evil.test", "https://evil.test", "/\\evil.test", "/\t/evil.test", "http:/evil.test", "evil.test"],
    )
    async def test_sign_in_never_sends_the_browser_off_site(
        self, anonymous: Dashboard, member: Member, target: str
    ) -> None:
        response = await attempt(anonymous, member.email, member.password, next=target)
        assert response.status_code == 303 and response.headers["location"] == "/"
        again = await anonymous.http.get("/login", params={"next": target})
        assert again.status_code == 303 and again.headers["location"] == "/"

    async def test_the_form_carries_only_a_safe_next(self, anonymous: Dashboard) -> None:
        page = await anonymous.http.get("/login", params={"next": "//evil.test/x"})
        assert 'name="next" value="/"' in page.text and "evil.test" not in page.text


class TestOrganization:
    async def test_the_viewer_is_of_the_users_own_organization(
        self, app: FastAPI, services: Services, other_member: Member, member: Member
    ) -> None:
        browser = await client_at(app)
        async with browser.http:
            await browser.sign_in(other_member)
            raw = browser.http.cookies[COOKIE]
        async with services.db.transaction(write=False) as conn:
            found = await find_session(conn, raw, services.clock.now(), lifetimes(services.settings))
        assert found is not None
        viewer, _due = found
        assert viewer.organization_id == other_member.tenant.org_id != member.tenant.org_id
        assert viewer.user_id == other_member.user_id and viewer.email == other_member.email


async def test_housekeeping_sweeps_expired_sessions(services: Services, member: Member) -> None:
    clock = ManualClock(START)
    live = lifetimes(services.settings)
    async with services.db.transaction() as conn:
        idle, _ = await open_session(conn, member.user_id, member.tenant.org_id, START - live.idle)
        old, _ = await open_session(conn, member.user_id, member.tenant.org_id, START - live.absolute)
        fresh, _ = await open_session(conn, member.user_id, member.tenant.org_id, START)
    chores = Chores(
        services.retention, None, SessionSweeper(services.db, clock, services.settings), clock=services.clock
    )
    await chores.housekeep()
    async with services.db.transaction(write=False) as conn:
        rows = await conn.execute(
            sa.select(dashboard_sessions.c.id_hash).where(dashboard_sessions.c.user_id == member.user_id)
        )
        assert rows.scalars().all() == [hash_session_id(fresh)]
    assert idle != old
    assert await SessionSweeper(services.db, clock, services.settings).run_once() == 0
