"""The hourly log counts (``log_counts``) equal a full count of the records after intake batches (through
each append path), after retention's deletions, and per organization."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa

from tests.support import Tenant
from threadline.kit.hours import hour_of
from threadline.runtime import Services
from threadline.telemetry import repository
from threadline.telemetry.repository import LogRepository
from threadline.telemetry.tables import log_counts, log_records

Key = tuple[str, str, str, int]


async def full_count(services: Services, organization_id: str) -> Counter[Key]:
    """Every record of the organization, counted by project, level, kind and hour of receipt."""
    t = log_records.c
    query = sa.select(t.project_id, t.level, t.kind, t.received_at)
    query = query.where(t.organization_id == organization_id)
    async with services.db.transaction(write=False) as conn:
        rows = (await conn.execute(query)).all()
    return Counter((r.project_id, r.level, r.kind, hour_of(r.received_at)) for r in rows)


async def kept_count(services: Services, organization_id: str) -> Counter[Key]:
    c = log_counts.c
    query = sa.select(c.project_id, c.level, c.kind, c.hour, c.records).where(
        c.organization_id == organization_id, c.records != 0
    )
    async with services.db.transaction(write=False) as conn:
        rows = (await conn.execute(query)).all()
    return Counter({(r.project_id, r.level, r.kind, r.hour): r.records for r in rows})


async def test_counts_follow_batches_and_deletions(
    intake: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    other_tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batches = [
        [{"message": "a"}, {"message": "b", "level": "error"}, {"message": "c", "level": "error"}],
        [{"message": f"n{i}", "level": ("debug", "warn", "fatal")[i % 3]} for i in range(50)],
        [{"message": "d", "level": "trace"}],
    ]
    for batch in batches:
        assert (await intake.post("/v1/logs", json=batch, headers=tenant.public)).status_code == 202
    events = [{"name": "signup"}, {"name": "login"}]
    assert (await intake.post("/v1/events", json=events, headers=tenant.public)).status_code == 202
    theirs = [{"message": "x", "level": "error"}]
    assert (await intake.post("/v1/logs", json=theirs, headers=other_tenant.public)).status_code == 202

    ours = await full_count(services, tenant.org_id)
    assert sum(ours.values()) == 56
    assert await kept_count(services, tenant.org_id) == ours
    assert {(level, kind) for _, level, kind, _ in ours} >= {("error", "log"), ("info", "event")}
    assert await kept_count(services, other_tenant.org_id) == await full_count(services, other_tenant.org_id)
    assert sum((await kept_count(services, other_tenant.org_id)).values()) == 1

    # Retention deletes in batches: after each, the counts still equal what is left.
    monkeypatch.setattr(repository, "_DELETE_BATCH", 7)
    later = datetime.now(UTC) + timedelta(days=1)
    async with services.db.transaction() as conn:
        assert await LogRepository(conn, tenant.org_id).delete_received_before(later) == 7
    left = await full_count(services, tenant.org_id)
    assert sum(left.values()) == 49
    assert await kept_count(services, tenant.org_id) == left
    while True:
        async with services.db.transaction() as conn:
            if not await LogRepository(conn, tenant.org_id).delete_received_before(later):
                break
    assert await kept_count(services, tenant.org_id) == Counter() == await full_count(services, tenant.org_id)
    assert sum((await kept_count(services, other_tenant.org_id)).values()) == 1
