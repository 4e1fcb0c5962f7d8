"""The cap on open streams per organization (``kit.streamslots``): log tails, run and thread streams count
together; over the limit a stream is refused with 429 ``TOO_MANY_STREAMS``; a slot is free again once its
client has gone.

httpx's ASGI transport reads a response whole, so streams that must stay open are driven as a server
would drive them: the app is called with a ``receive`` that says ``http.disconnect`` when the test hangs
up."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI

from tests.runs.helpers import SLOW, start_run, wait_for_event
from tests.support import Tenant, assert_error, make_thread
from threadline.kit.streamslots import RETRY_AFTER_SECONDS
from threadline.provisioning import set_stream_limit
from threadline.runtime import Services


class HeldStream:
    """A stream request in flight: its status and headers once started, its body as it arrives."""

    def __init__(self, app: FastAPI, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": parts.path,
            "raw_path": parts.path.encode(),
            "query_string": parts.query.encode(),
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        self.started: asyncio.Future[tuple[int, dict[str, str]]] = asyncio.get_running_loop().create_future()
        self.body = bytearray()
        self._request_sent = False
        self._gone = asyncio.Event()
        self.task = asyncio.create_task(app(self.scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if not self._request_sent:
            self._request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
            self.started.set_result((message["status"], headers))
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    async def status(self) -> int:
        status, _ = await asyncio.wait_for(asyncio.shield(self.started), 10)
        return status

    async def hang_up(self) -> None:
        self._gone.set()
        await asyncio.wait_for(self.task, 10)

    def response(self) -> httpx.Response:
        """The whole answer of a stream that has ended (a refusal)."""
        status, headers = self.started.result()
        return httpx.Response(status, headers=headers, content=bytes(self.body))


async def hold(app: FastAPI, tenant: Tenant, path: str) -> HeldStream:
    stream = HeldStream(app, path, tenant.secret)
    assert await stream.status() == 200
    return stream


async def limit_streams(services: Services, tenant: Tenant, limit: int) -> None:
    async with services.db.transaction() as conn:
        await set_stream_limit(conn, services.signals, tenant.org_id, limit, now=services.clock.now())


async def test_the_third_stream_over_a_limit_of_two_is_refused_until_one_ends(
    app: FastAPI, client: httpx.AsyncClient, services: Services, tenant: Tenant, other_tenant: Tenant
) -> None:
    await limit_streams(services, tenant, 2)
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=SLOW)
    await wait_for_event(services, run["id"], "run_started")
    held: list[HeldStream] = []
    try:
        held.append(await hold(app, tenant, "/v1/logs/stream"))
        held.append(await hold(app, tenant, f"/v1/runs/{run['id']}/stream"))
        assert services.stream_slots.held(tenant.org_id) == 2

        refused = HeldStream(app, f"/v1/threads/{thread}/stream", tenant.secret)
        await asyncio.wait_for(refused.task, 10)
        response = refused.response()
        assert_error(
            response, 429, "TOO_MANY_REQUESTS", operation_id="threads.stream", reason="TOO_MANY_STREAMS"
        )
        body = response.json()
        assert "limit" in body["message"] and body["retryAfterSeconds"] == RETRY_AFTER_SECONDS
        assert body["error"]["code"] == "RATE_LIMIT_EXCEEDED"  # the key guide's envelope too
        assert response.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
        assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} <= set(response.headers)
        # A log tail counts as much as a run stream; another organization is not limited by this one.
        logs = HeldStream(app, "/v1/logs/stream", tenant.secret)
        await asyncio.wait_for(logs.task, 10)
        assert logs.response().status_code == 429
        theirs = await hold(app, other_tenant, "/v1/logs/stream")
        held.append(theirs)
        assert services.stream_slots.held(tenant.org_id) == 2

        # The client of the log tail hangs up: its slot is free, and the thread stream opens.
        await held.pop(0).hang_up()
        assert services.stream_slots.held(tenant.org_id) == 1
        held.append(await hold(app, tenant, f"/v1/threads/{thread}/stream"))
        assert services.stream_slots.held(tenant.org_id) == 2
    finally:
        for stream in held:
            await stream.hang_up()
        await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
    assert services.stream_slots.held(tenant.org_id) == 0
    assert services.stream_slots.held(other_tenant.org_id) == 0


async def test_slots_are_released_by_streams_that_end_and_by_refusals_after_the_slot(
    client: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A stream that ends by itself (a finished run's replay, a thread without runs) and a stream refused
    after its slot was taken (an unknown run: 404) give their slot back."""
    await limit_streams(services, tenant, 1)
    thread = await make_thread(client, tenant)
    for _ in range(3):
        done = await client.get(f"/v1/threads/{thread}/stream", headers=tenant.secret)
        assert done.status_code == 200 and done.text.endswith("data: [DONE]\n\n")
        missing = await client.get("/v1/runs/run_00000000000000000000000000/stream", headers=tenant.secret)
        assert missing.status_code == 404
    run = await start_run(client, tenant, thread, input="short")
    for _ in range(2):
        replay = await client.get(f"/v1/runs/{run['id']}/stream", headers=tenant.secret, timeout=20)
        assert replay.status_code == 200 and "run_completed" in replay.text
    assert services.stream_slots.held(tenant.org_id) == 0


async def test_the_default_limit_comes_from_the_settings(services: Services, tenant: Tenant) -> None:
    principal = await services.authenticator.authenticate(tenant.secret["Authorization"][7:].encode())
    assert principal is not None
    assert principal.stream_limit == services.settings.default_stream_limit == 500
    await limit_streams(services, tenant, 7)  # the signal drops the cached principal at once
    principal = await services.authenticator.authenticate(tenant.secret["Authorization"][7:].encode())
    assert principal is not None and principal.stream_limit == 7
