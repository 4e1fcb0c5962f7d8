"""telemetry.log_store: SQLite's log appends in a process of their own (the embedded shape only).

The intake's own tests go through the store on SQLite (and again with ``THREADLINE_LOG_STORE=inline``,
which starts none); these check the store's promises directly: rows are committed by another process, in
the sequence's order; what SQLite refuses comes back as the driver's error and the store goes on; a store
that dies or cannot start is an ``OSError`` and is started again."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.support import Tenant
from threadline.runtime import Services
from threadline.telemetry import log_store
from threadline.telemetry.log_store import AppendError, StoreProcess
from threadline.telemetry.tables import log_records, log_sequence

pytestmark = pytest.mark.embedded


@pytest.fixture(name="log_store")
def store_setting() -> str:
    """``THREADLINE_LOG_STORE``: the store process, unless a test says otherwise."""
    return "process"


def rows_for(project_id: str, organization_id: str, *messages: str) -> list[list[Any]]:
    values = {
        "organization_id": organization_id,
        "project_id": project_id,
        "kind": "log",
        "level": "info",
        "timestamp": "2026-11-24 12:00:00.000000",
        "attributes": "{}",
    }
    return [[values.get(column, message if column == "message" else None) for column in log_store.COLUMNS]
            for message in messages]  # fmt: skip


async def stored(services: Services, organization_id: str) -> list[tuple[str, str]]:
    async with services.db.transaction(write=False) as conn:
        query = (
            sa.select(log_records.c.id, log_records.c.message)
            .where(log_records.c.organization_id == organization_id)
            .order_by(log_records.c.id)
        )
        return [(row.id, row.message) for row in await conn.execute(query)]


@pytest.fixture
async def store(services: Services) -> AsyncIterator[StoreProcess]:
    assert services.db.sqlite_path is not None
    process = StoreProcess(services.db.sqlite_path)
    yield process
    await process.close()


async def test_the_store_commits_in_a_process_of_its_own_in_the_sequences_order(
    services: Services, tenant: Tenant, store: StoreProcess
) -> None:
    await store.commit(rows_for(tenant.project_id, tenant.org_id, "one", "two"))
    assert store.pid is not None
    assert store.pid != os.getpid()
    await store.commit(rows_for(tenant.project_id, tenant.org_id, "three"))
    records = await stored(services, tenant.org_id)
    assert [message for _, message in records] == ["one", "two", "three"]
    async with services.db.transaction(write=False) as conn:
        last_id = (await conn.execute(sa.select(log_sequence.c.last_id))).scalar_one()
    assert last_id == records[-1][0]


async def test_a_refused_append_is_the_drivers_error_and_the_store_goes_on(
    services: Services, tenant: Tenant, store: StoreProcess
) -> None:
    await store.commit(rows_for(tenant.project_id, tenant.org_id, "before"))
    pid = store.pid
    refused = rows_for("prj_missing", tenant.org_id, "kept out")
    with pytest.raises(AppendError) as raised:
        await store.commit(refused + rows_for(tenant.project_id, tenant.org_id, "rolled back"))
    assert isinstance(raised.value.error, sqlite3.IntegrityError)
    assert raised.value.statement.startswith("INSERT INTO log_records")
    await store.commit(rows_for(tenant.project_id, tenant.org_id, "after"))
    assert store.pid == pid
    assert [message for _, message in await stored(services, tenant.org_id)] == ["before", "after"]


async def test_a_store_that_died_is_started_again(
    services: Services, tenant: Tenant, store: StoreProcess
) -> None:
    await store.commit(rows_for(tenant.project_id, tenant.org_id, "first"))
    first = store.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    second = rows_for(tenant.project_id, tenant.org_id, "second")
    try:
        await store.commit(second)  # the store may be seen gone only now: never acknowledged, then ...
    except OSError:
        await store.commit(second)  # ... the next commit starts a new store

    assert store.pid not in (None, first)
    assert [message for _, message in await stored(services, tenant.org_id)] == ["first", "second"]


async def test_a_store_that_ends_without_answering_is_an_oserror(tmp_path: Path, tenant: Tenant) -> None:
    unopenable = StoreProcess(tmp_path / "no such directory" / "threadline.db")
    try:
        with pytest.raises(OSError, match="log store process ended"):
            await unopenable.commit(rows_for(tenant.project_id, tenant.org_id, "nowhere"))
    finally:
        await unopenable.close()


async def test_close_ends_the_store_and_refuses_further_commits(tenant: Tenant, store: StoreProcess) -> None:
    await store.commit(rows_for(tenant.project_id, tenant.org_id, "last"))
    pid = store.pid
    await store.close()
    assert store.pid is None
    assert pid is not None
    with pytest.raises(ProcessLookupError):  # exited and reaped, not merely detached
        os.kill(pid, 0)
    with pytest.raises(OSError, match="closed"):
        await store.commit(rows_for(tenant.project_id, tenant.org_id, "too late"))


def store_children() -> list[int]:
    """This process's children that run the log store (read from /proc: what an operator would see)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"threadline.telemetry.log_store" in command:
            children.append(int(entry.name))
    return children


@pytest.mark.parametrize("log_store", ["process", "inline"])
async def test_the_intake_appends_through_the_store_unless_told_inline(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, log_store: str
) -> None:
    before = set(store_children())
    response = await intake.post("/v1/logs", json=[{"message": "appended"}], headers=tenant.public)
    assert response.status_code == 202, response.text
    started = set(store_children()) - before
    if log_store == "process":
        assert started, "no store process was started for the intake's append"
    else:
        assert not started, "a store process was started with THREADLINE_LOG_STORE=inline"
    assert [message for _, message in await stored(services, tenant.org_id)] == ["appended"]


async def test_the_intake_answers_503_while_the_store_cannot_run_and_recovers(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real process that ends without answering: what a store that crashes at start looks like.
    monkeypatch.setattr(log_store.sys, "executable", "/bin/false")
    refused = await intake.post("/v1/logs", json=[{"message": "not acknowledged"}], headers=tenant.public)
    assert refused.status_code == 503, refused.text
    assert refused.json()["reason"] == "DEPENDENCY_DOWN"
    monkeypatch.undo()
    response = await intake.post("/v1/logs", json=[{"message": "acknowledged"}], headers=tenant.public)
    assert response.status_code == 202, response.text
    assert [message for _, message in await stored(services, tenant.org_id)] == ["acknowledged"]
