"""The dashboard's live streams under the organization's stream cap, and its tails sharing feeds.

A dashboard tab following logs or a run holds a stream like ``GET /v1/logs/stream`` does, so it takes one
of the organization's slots (shared with the API's streams) and is refused over the limit; tabs of one
organization with the same filters share one feed, so a commit is read and rendered once for all of them.
"""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI

from tests.dashboard.support import Dashboard
from tests.kit.test_stream_slots import HeldStream, hold, limit_streams
from tests.runs.helpers import SLOW, start_run, wait_for_event
from tests.support import Tenant, make_thread
from threadline.runtime import Services


def _cookie_headers(dashboard: Dashboard) -> dict[str, str]:
    """What a browser tab sends on its EventSource: the session cookie, nothing else."""
    cookie = "; ".join(f"{name}={value}" for name, value in dashboard.http.cookies.items())
    return {"cookie": cookie, "accept": "text/event-stream"}


async def test_dashboard_tails_and_run_views_count_against_the_stream_cap(
    app: FastAPI,
    client: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    other_tenant: Tenant,
    dashboard: Dashboard,
) -> None:
    await limit_streams(services, tenant, 2)
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=SLOW)
    await wait_for_event(services, run["id"], "run_started")
    browser = _cookie_headers(dashboard)
    held: list[HeldStream] = []
    try:
        # The API's streams and the dashboard's count together.
        held.append(await hold(app, tenant, "/v1/logs/stream"))
        tab = HeldStream(app, f"/runs/{run['id']}/events", browser)
        held.append(tab)
        assert await tab.status() == 200
        assert services.stream_slots.held(tenant.org_id) == 2

        refused = HeldStream(app, "/logs/stream", browser)
        await asyncio.wait_for(refused.task, 10)
        assert refused.response().status_code == 429
        assert "limit" in refused.response().text
        refused_run = HeldStream(app, f"/runs/{run['id']}/events", browser)
        await asyncio.wait_for(refused_run.task, 10)
        assert refused_run.response().status_code == 429
        # Another organization's slots are its own.
        held.append(await hold(app, other_tenant, "/v1/logs/stream"))
    finally:
        for stream in held:
            await stream.hang_up()
    assert services.stream_slots.held(tenant.org_id) == 0
    again = HeldStream(app, "/logs/stream", browser)
    try:
        assert await again.status() == 200
    finally:
        await again.hang_up()


async def _first_frame(tab: HeldStream) -> None:
    """A tab follows its feed once its first frame (the starting position) is out: before that, the
    feed may not exist yet (the status goes out first)."""
    deadline = asyncio.get_running_loop().time() + 10
    while not tab.body:  # HeldStream records frames; it has no event to wait on
        assert asyncio.get_running_loop().time() < deadline, "no frame within 10 s"
        await asyncio.sleep(0.01)


async def test_tabs_with_the_same_filters_share_one_feed(
    app: FastAPI, services: Services, tenant: Tenant, dashboard: Dashboard
) -> None:
    browser = _cookie_headers(dashboard)
    before = services.log_tails.followed
    tabs = [HeldStream(app, "/logs/stream?level=warn", browser) for _ in range(3)]
    other_filter = HeldStream(app, "/logs/stream?level=error", browser)
    try:
        for tab in [*tabs, other_filter]:
            assert await tab.status() == 200
            await _first_frame(tab)
        assert services.log_tails.followed - before == 2  # one feed per distinct filter, not per tab
    finally:
        for tab in [*tabs, other_filter]:
            await tab.hang_up()
