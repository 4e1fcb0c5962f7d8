"""Creating runs, waiting for them, and reading their streams, for the run tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import sqlalchemy as sa

from tests.support import Tenant
from threadline.runs.tables import run_events
from threadline.runtime import Services

DONE = "[DONE]"
# A run that streams for a long time (the offline model's directives): for cancels, queues and live reads.
SLOW = "#notools #chunks=2000 #delay=20"


def parse_sse(text: str) -> list[Any]:
    """The events of a stream body in order (dicts), ``DONE`` for the sentinel; comments and
    position-only frames skipped. Checks that each frame's ``id:`` equals its JSON's cursor."""
    found: list[Any] = []
    for block in text.split("\n\n"):
        fields = [line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")]
        data = [value for name, value in fields if name == "data"]
        ids = [value for name, value in fields if name == "id"]
        if not data:
            continue
        if data[0] == DONE:
            found.append(DONE)
            continue
        event = json.loads(data[0])
        assert ids == [event["cursor"]], block
        found.append(event)
    return found


async def start_run(client: httpx.AsyncClient, tenant: Tenant, thread_id: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/threads/{thread_id}/runs", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    run: dict[str, Any] = response.json()
    return run


async def get_run(client: httpx.AsyncClient, tenant: Tenant, run_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/runs/{run_id}", headers=tenant.secret)
    assert response.status_code == 200, response.text
    run: dict[str, Any] = response.json()
    return run


async def wait_for_status(
    client: httpx.AsyncClient, tenant: Tenant, run_id: str, *statuses: str
) -> dict[str, Any]:
    async with asyncio.timeout(15):
        while True:
            run = await get_run(client, tenant, run_id)
            if run["status"] in statuses:
                return run
            await asyncio.sleep(0.02)


async def wait_for_event(services: Services, run_id: str, type_: str) -> None:
    """Until the run has recorded an event of ``type_``: its stream would show it from then on."""
    query = sa.select(run_events.c.seq).where(run_events.c.run_id == run_id, run_events.c.type == type_)
    async with asyncio.timeout(15):
        while True:
            async with services.db.transaction(write=False) as conn:
                if (await conn.execute(query.limit(1))).first() is not None:
                    return
            await asyncio.sleep(0.02)


def executing_task(run_id: str) -> asyncio.Task[Any]:
    """The task this process's executor runs ``run_id`` in (the tests' app executes runs itself, on the
    test's loop): it ends after the last thing the executor writes for the run."""
    [task] = [task for task in asyncio.all_tasks() if task.get_name() == f"run-{run_id}"]
    return task


async def read_stream(
    client: httpx.AsyncClient,
    tenant: Tenant,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    **params: Any,
) -> list[Any]:
    """The whole stream of a run that ends (the test client reads a response to its end)."""
    response = await client.get(path, headers={**tenant.secret, **(headers or {})}, params=params, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def types(events: list[Any]) -> list[str]:
    return [e if e == DONE else e["type"] for e in events]
