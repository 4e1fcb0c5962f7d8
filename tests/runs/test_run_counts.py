"""The hourly run counts (``run_counts``, kept by triggers) equal a full count of the runs by hour of
creation and status, with the tokens of those that ended, through creation, execution, cancellation and a
thread's deletion (its runs go by cascade), and per organization."""

from __future__ import annotations

from datetime import timedelta

import httpx
import sqlalchemy as sa

from tests.runs.helpers import SLOW, start_run, wait_for_status
from tests.support import Tenant, make_thread
from threadline.kit.clock import utcnow
from threadline.kit.hours import hour_of
from threadline.kit.ids import new_id
from threadline.runs.tables import run_counts, runs
from threadline.runtime import Services

Counts = dict[tuple[int, str], tuple[int, int]]
ENDED = ("completed", "failed", "cancelled")


async def full_count(services: Services, organization_id: str) -> Counts:
    r = runs.c
    query = sa.select(r.created_at, r.status, r.input_tokens, r.output_tokens).where(
        r.organization_id == organization_id
    )
    counted: Counts = {}
    async with services.db.transaction(write=False) as conn:
        for row in (await conn.execute(query)).all():
            key = (hour_of(row.created_at), row.status)
            n, tokens = counted.get(key, (0, 0))
            used = row.input_tokens + row.output_tokens if row.status in ENDED else 0
            counted[key] = (n + 1, tokens + used)
    return counted


async def kept_count(services: Services, organization_id: str) -> Counts:
    c = run_counts.c
    query = sa.select(c.hour, c.status, c.runs, c.tokens).where(
        c.organization_id == organization_id, sa.or_(c.runs != 0, c.tokens != 0)
    )
    async with services.db.transaction(write=False) as conn:
        rows = (await conn.execute(query)).all()
    return {(row.hour, row.status): (row.runs, row.tokens) for row in rows}


async def test_counts_follow_runs_through_their_lives(
    client: httpx.AsyncClient, services: Services, tenant: Tenant, other_tenant: Tenant
) -> None:
    kept_thread = await make_thread(client, tenant)
    done = await start_run(client, tenant, kept_thread, input="hello #notools")
    await wait_for_status(client, tenant, done["id"], "completed")
    doomed_thread = await make_thread(client, tenant)
    first = await start_run(client, tenant, doomed_thread, input="hello #notools")
    await wait_for_status(client, tenant, first["id"], "completed")
    slow = await start_run(client, tenant, doomed_thread, input=f"hello {SLOW}")
    await wait_for_status(client, tenant, slow["id"], "running")
    cancelled = await client.post(f"/v1/runs/{slow['id']}/cancel", headers=tenant.secret)
    assert cancelled.status_code == 200, cancelled.text
    await wait_for_status(client, tenant, slow["id"], "cancelled")
    their_thread = await make_thread(client, other_tenant)
    theirs = await start_run(client, other_tenant, their_thread, input="hi #notools")
    await wait_for_status(client, other_tenant, theirs["id"], "completed")

    ours = await full_count(services, tenant.org_id)
    assert sum(n for n, _ in ours.values()) == 3
    assert sum(tokens for _, tokens in ours.values()) > 0
    assert {status for _, status in ours} >= {"completed", "cancelled"}
    assert await kept_count(services, tenant.org_id) == ours

    assert (await client.delete(f"/v1/threads/{doomed_thread}", headers=tenant.secret)).status_code == 200
    left = await full_count(services, tenant.org_id)
    assert sum(n for n, _ in left.values()) == 1
    assert await kept_count(services, tenant.org_id) == left
    assert await kept_count(services, other_tenant.org_id) == await full_count(services, other_tenant.org_id)
    assert sum(n for n, _ in (await kept_count(services, other_tenant.org_id)).values()) == 1


async def test_every_transition_moves_one_count(
    client: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """Written straight to the table, as any code path might: each status change (both ways between running
    and requires_action, usage recorded while running) leaves the counts equal to a full count."""
    thread_id = await make_thread(client, tenant)
    now = utcnow()
    # Held by an executor that is not there (a lease far ahead): none of the test app's claims or reaps it.
    run = {
        "id": new_id("run"), "organization_id": tenant.org_id, "thread_id": thread_id, "status": "running",
        "model": "offline", "meta": {}, "created_at": now, "lease_owner": "elsewhere",
        "lease_expires_at": now + timedelta(hours=1),
    }  # fmt: skip
    steps: list[dict[str, object]] = [
        {"input_tokens": 7},
        {"status": "requires_action"},
        {"status": "running"},
        {"output_tokens": 5},
        {"status": "completed"},
    ]
    async with services.db.transaction() as conn:
        await conn.execute(sa.insert(runs), [run])
    assert await kept_count(services, tenant.org_id) == {(hour_of(now), "running"): (1, 0)}
    for values in steps:
        async with services.db.transaction() as conn:
            await conn.execute(sa.update(runs).where(runs.c.id == run["id"]).values(**values))
        assert await kept_count(services, tenant.org_id) == await full_count(services, tenant.org_id), values
    assert await kept_count(services, tenant.org_id) == {(hour_of(now), "completed"): (1, 12)}
    async with services.db.transaction() as conn:
        await conn.execute(sa.delete(runs).where(runs.c.id == run["id"]))
    assert await kept_count(services, tenant.org_id) == {}
