"""A keyed ``POST /v1/threads`` stores its answer in the thread's own transaction (``idempotency.carried``):
the thread and its answer are committed together or not at all, and a request that goes away while its
thread commits leaves a key that replays rather than one that makes a second thread."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.support import Tenant
from threadline.idempotency.store import Answer
from threadline.idempotency.tables import idempotency_keys
from threadline.kit.group_commit import GroupCommit
from threadline.runtime import Services
from threadline.threads import service
from threadline.threads.tables import threads


async def key_row(services: Services, organization_id: str, key: str) -> dict[str, Any] | None:
    k = idempotency_keys.c
    query = sa.select(k.status, k.body).where(k.organization_id == organization_id, k.key == key)
    async with services.db.transaction(write=False) as conn:
        row = (await conn.execute(query)).mappings().first()
    return dict(row) if row else None


async def thread_ids(services: Services, organization_id: str) -> list[str]:
    query = sa.select(threads.c.id).where(threads.c.organization_id == organization_id)
    async with services.db.transaction(write=False) as conn:
        return list((await conn.execute(query)).scalars())


async def test_the_answer_commits_with_its_thread_or_not_at_all(services: Services, tenant: Tenant) -> None:
    assert await services.idempotency.claim(tenant.org_id, "k", "f" * 64, datetime.now(UTC))
    existing = await service.create_thread_committed(
        services.thread_inserts, tenant.org_id, title=None, metadata={}, now=services.clock.now()
    )
    answer = Answer(tenant.org_id, "k", 201, "application/json", b'{"id":"x"}')
    clash = dataclasses.replace(existing, title="same id")
    with pytest.raises(sa.exc.IntegrityError):
        await service.insert_committed(services.thread_inserts, clash, answer)
    assert await key_row(services, tenant.org_id, "k") == {"status": None, "body": None}  # still in flight
    made = service.new_thread(tenant.org_id, None, {}, now=services.clock.now())
    await service.insert_committed(services.thread_inserts, made, answer)
    assert await key_row(services, tenant.org_id, "k") == {"status": 201, "body": b'{"id":"x"}'}
    assert sorted(await thread_ids(services, tenant.org_id)) == sorted([existing.id, made.id])


class Held:
    """The process's thread committer, telling the test when an item is queued (its commit under way)."""

    def __init__(self, inner: GroupCommit[Any, None]) -> None:
        self.inner = inner
        self.queued = asyncio.Event()
        self.commits: list[asyncio.Future[None]] = []

    async def submit(self, item: Any) -> None:
        commit = self.inner.enqueue(item)
        self.commits.append(commit)
        self.queued.set()
        await asyncio.shield(commit)  # a caller gone leaves ``commit`` to report the commit to the test


async def test_a_request_gone_while_its_thread_commits_is_replayed_not_repeated(
    client: httpx.AsyncClient, services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(services.thread_inserts)
    monkeypatch.setattr(services, "thread_inserts", held)
    headers = {**tenant.secret, "Idempotency-Key": "gone"}
    request = asyncio.ensure_future(client.post("/v1/threads", headers=headers, json={}))
    await held.queued.wait()
    request.cancel()  # the caller goes away; its thread, queued, is committed anyway
    with pytest.raises(asyncio.CancelledError):
        await request
    await asyncio.gather(*held.commits)
    [made] = await thread_ids(services, tenant.org_id)
    again = await client.post("/v1/threads", headers=headers, json={})
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == made
    assert await thread_ids(services, tenant.org_id) == [made]


async def test_answers_and_releases_written_together(services: Services, tenant: Tenant) -> None:
    """One group of answers holding both kinds (``store.write_answers``): each lands on its own key."""
    for key in ("stored", "released", "also-stored"):
        assert await services.idempotency.claim(tenant.org_id, key, "f" * 64, services.clock.now())
    await asyncio.gather(
        services.idempotency.answer(tenant.org_id, "stored", 201, "application/json", b"{}"),
        services.idempotency.answer(tenant.org_id, "released", None, None, b""),
        services.idempotency.answer(tenant.org_id, "also-stored", 404, "text/plain", b"gone"),
    )
    assert await key_row(services, tenant.org_id, "stored") == {"status": 201, "body": b"{}"}
    assert await key_row(services, tenant.org_id, "released") is None
    assert await key_row(services, tenant.org_id, "also-stored") == {"status": 404, "body": b"gone"}


class Failing:
    async def submit(self, item: Any) -> None:
        raise RuntimeError("the disk is gone")


async def test_a_failed_request_releases_its_key(
    client: httpx.AsyncClient, services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {**tenant.secret, "Idempotency-Key": "fails-once"}
    with monkeypatch.context() as patched:
        patched.setattr(services, "thread_inserts", Failing())
        failed = await client.post("/v1/threads", headers=headers, json={})
    assert failed.status_code == 500
    assert await key_row(services, tenant.org_id, "fails-once") is None
    again = await client.post("/v1/threads", headers=headers, json={})
    assert again.status_code == 201 and "idempotent-replayed" not in again.headers
    assert await thread_ids(services, tenant.org_id) == [again.json()["id"]]
