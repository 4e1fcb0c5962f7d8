"""The background chores (``threadline.chores``) run in every process that serves the API or executes runs,
not in the intake alone."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from tests.conftest import Backend
from tests.support import Tenant, running_worker
from threadline.app import create_app
from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.kit.clock import Clock
from threadline.kit.ids import id_at
from threadline.messages.service import append_message
from threadline.organizations.tables import organizations
from threadline.runtime import Services
from threadline.search import postings
from threadline.telemetry.log_store import ID_PREFIX
from threadline.telemetry.tables import log_records
from threadline.threads.service import create_thread

_LAST_SEQ = sa.text("SELECT max(seq) FROM messages")


async def test_the_api_app_runs_them_in_its_own_lifespan_and_the_intake_alone_does_not(
    settings: Settings,
) -> None:
    api = create_app(settings)
    async with api.router.lifespan_context(api):
        chores = api.state.runtime.services.chores
        assert chores is not None and "threadline-housekeeping" in chores.running()
    assert chores.running() == set()  # stopped with the services
    intake = create_intake_app(settings)
    async with intake.router.lifespan_context(intake):
        assert intake.state.runtime.services.chores is None


@pytest.mark.distributed
async def test_a_deployment_without_serve_applies_retention_and_seals_postings(
    backend: Backend, settings: Settings, services: Services, tenant: Tenant
) -> None:
    """``threadline worker`` with no ``serve`` anywhere (the API under another server, or none): its chores
    delete a record past its organization's retention and seal the messages written before it started."""
    db = services.db
    received = datetime.now(UTC) - timedelta(days=5)
    record = {
        "id": id_at(ID_PREFIX, int(received.timestamp() * 1000), 1),
        "organization_id": tenant.org_id,
        "project_id": tenant.project_id,
        "received_at": received,
        "timestamp": received,
        "kind": "log",
        "level": "info",
        "message": "expired",
        "attributes": {},
    }
    ours = (
        sa.select(sa.func.count())
        .select_from(log_records)
        .where(log_records.c.organization_id == tenant.org_id)
    )
    async with db.transaction() as conn:
        retention = organizations.c.id == tenant.org_id
        await conn.execute(sa.update(organizations).where(retention).values(log_retention_days=1))
        await conn.execute(sa.insert(log_records).values(record))
        thread = await create_thread(conn, tenant.org_id, title=None, metadata={}, now=Clock().now())
        await append_message(
            conn, tenant.org_id, thread.id, role="user", content="wombat", metadata={}, now=Clock().now()
        )
    async with db.transaction(write=False) as conn:
        last = int((await conn.execute(_LAST_SEQ)).scalar_one())
        assert (await conn.execute(ours)).scalar_one() == 1
        assert await postings.sealed_seq(conn) < last

    with running_worker(backend.env(settings)) as worker:
        deadline = time.monotonic() + 30
        while True:
            async with db.transaction(write=False) as conn:
                left = (await conn.execute(ours)).scalar_one()
                sealed = await postings.sealed_seq(conn)
            if left == 0 and sealed >= last:
                break
            assert time.monotonic() < deadline, (
                f"{left} record left, sealed {sealed} < {last}:\n{worker.log()}"
            )
            await asyncio.sleep(0.2)
