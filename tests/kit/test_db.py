"""kit.group_commit (``GroupCommit``) and the driver-level reads (``PlainQuery`` and the readers of
stored values), on both shapes. The group commit is exercised with the threads table it serves."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tests.support import Tenant
from threadline.kit.clock import Clock, isoformat
from threadline.kit.db import stored_isoformat, stored_json
from threadline.kit.group_commit import GroupCommit
from threadline.kit.plain_query import PlainQuery
from threadline.runtime import Services
from threadline.threads.repository import Thread, insert_threads
from threadline.threads.service import create_thread_committed
from threadline.threads.tables import threads


class Recording:
    """``insert_threads`` that remembers the groups it was handed."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []

    def __call__(self, connection: Connection, new: Sequence[Thread]) -> None:
        self.groups.append([thread.id for thread in new])
        insert_threads(connection, new)


async def committed_ids(services: Services, organization_id: str) -> list[str]:
    async with services.db.transaction(write=False) as conn:
        query = sa.select(threads.c.id).where(threads.c.organization_id == organization_id)
        return sorted((await conn.execute(query)).scalars())


async def create(committer: GroupCommit[Thread, None], tenant: Tenant, title: str) -> Thread:
    return await create_thread_committed(
        committer, tenant.org_id, title=title, metadata={"k": "v"}, now=Clock().now()
    )


async def test_concurrent_items_share_a_transaction_and_are_all_committed_in_order(
    services: Services, tenant: Tenant
) -> None:
    recording = Recording()
    committer: GroupCommit[Thread, None] = GroupCommit(services.db, recording, name="test")
    made = await asyncio.gather(*(create(committer, tenant, f"t{i}") for i in range(40)))
    # Everything submitted in one step of the loop is committed together, in submission order...
    assert len(recording.groups) < len(made)
    written = [thread_id for group in recording.groups for thread_id in group]
    assert written == [thread.id for thread in made]
    # ... which is id order: ids follow commit order as they did with a transaction per request.
    assert written == sorted(written)
    # Every submit returned after its commit: all of them are visible to a new transaction.
    assert await committed_ids(services, tenant.org_id) == sorted(written)


async def test_one_refused_item_does_not_fail_the_others(services: Services, tenant: Tenant) -> None:
    recording = Recording()
    committer: GroupCommit[Thread, None] = GroupCommit(services.db, recording, name="test")
    await check_refused_item_retried_alone(services, tenant, committer, recording.groups)


async def check_refused_item_retried_alone(
    services: Services, tenant: Tenant, committer: GroupCommit[Thread, None], groups: list[list[str]]
) -> None:
    """A group of three with a duplicate id in the middle fails, then each item is retried alone: the
    duplicate is refused, the other two are committed."""
    existing = await create(committer, tenant, "first")
    duplicate = dataclasses.replace(existing, title="same id")
    results = await asyncio.gather(
        create(committer, tenant, "a"),
        committer.submit(duplicate),
        create(committer, tenant, "b"),
        return_exceptions=True,
    )
    assert isinstance(results[1], sa.exc.IntegrityError)
    good = [result for result in (results[0], results[2]) if isinstance(result, Thread)]
    assert len(good) == 2
    assert groups[-4:] == [
        [good[0].id, existing.id, good[1].id],
        [good[0].id],
        [existing.id],
        [good[1].id],
    ]
    assert await committed_ids(services, tenant.org_id) == sorted([existing.id, *(t.id for t in good)])


async def test_a_caller_that_goes_away_still_has_its_item_committed(
    services: Services, tenant: Tenant
) -> None:
    committer: GroupCommit[Thread, None] = GroupCommit(services.db, Recording(), name="test")
    waiting = asyncio.ensure_future(create(committer, tenant, "abandoned"))
    await asyncio.sleep(0)  # queued
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await committer.aclose()
    assert len(await committed_ids(services, tenant.org_id)) == 1


async def test_a_failure_whose_caller_went_away_is_not_reported_as_lost(
    services: Services, tenant: Tenant
) -> None:
    """A caller that goes away cancels its own future, which its group's failure then skips: asyncio has
    no exception to report as never retrieved, and the caller still waiting hears the failure.

    The caller goes away while its group is being written, before the write fails. On SQLite the write runs
    on a worker thread and waits for the loop to cancel the caller; on PostgreSQL it runs on the loop's own
    thread (SQLAlchemy's greenlet bridge), where waiting would block the loop, so it cancels the caller
    itself. Either way the cancel precedes the failure, which reaches the loop only after the write raised."""
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    loop_thread = threading.get_ident()
    cancelled = threading.Event()
    callers: dict[str, asyncio.Future[Thread]] = {}

    def cancel_gone() -> None:
        callers["gone"].cancel()
        cancelled.set()

    def broken(connection: Connection, new: Sequence[Thread]) -> None:
        if threading.get_ident() == loop_thread:
            cancel_gone()
        else:
            loop.call_soon_threadsafe(cancel_gone)
            assert cancelled.wait(10)
        raise RuntimeError("disk on fire")

    committer: GroupCommit[Thread, None] = GroupCommit(services.db, broken, name="test")
    try:
        gone = callers["gone"] = asyncio.ensure_future(create(committer, tenant, "gone"))
        staying = asyncio.ensure_future(create(committer, tenant, "staying"))
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert cancelled.is_set()
        with pytest.raises(RuntimeError, match="disk on fire"):
            await staying
        await committer.aclose()
        del gone, staying
        callers.clear()
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [context["message"] for context in reported] == []


async def test_a_failure_that_is_not_the_datas_fails_its_group_and_the_committer_goes_on(
    services: Services, tenant: Tenant
) -> None:
    calls = 0

    def broken_once(connection: Connection, new: Sequence[Thread]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("disk on fire")
        insert_threads(connection, new)

    committer: GroupCommit[Thread, None] = GroupCommit(services.db, broken_once, name="test")
    with pytest.raises(RuntimeError):
        await create(committer, tenant, "lost")
    later = await create(committer, tenant, "kept")
    assert await committed_ids(services, tenant.org_id) == [later.id]


async def test_a_plain_read_returns_stored_values_that_read_back_as_sqlalchemy_reads_them(
    services: Services, tenant: Tenant
) -> None:
    await create(services.thread_inserts, tenant, "plain")
    columns = [threads.c.id, threads.c.meta, threads.c.created_at]
    query = sa.select(*columns).where(threads.c.organization_id == sa.bindparam("organization_id"))
    plain = await services.db.read(
        PlainQuery(query.limit(sa.bindparam("limit"))), {"organization_id": tenant.org_id, "limit": 5}
    )
    async with services.db.transaction(write=False) as conn:
        typed = (await conn.execute(query, {"organization_id": tenant.org_id})).all()
    assert len(plain) == len(typed) == 1
    assert plain[0][0] == typed[0][0]
    assert stored_json(plain[0][1]) == typed[0][1] == {"k": "v"}
    assert stored_isoformat(plain[0][2]) == isoformat(typed[0][2])


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-23 05:12:02.097123",
        "2026-11-23 05:12:02.000000",
        "2026-11-23 05:12:02",
        "2026-11-23 05:12:02.5",
        datetime(2026, 11, 23, 5, 12, 2, 97999, tzinfo=UTC),
    ],
)
def test_stored_isoformat_writes_what_isoformat_writes(value: datetime | str) -> None:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value).replace(tzinfo=UTC)
    assert stored_isoformat(value) == isoformat(moment)


def test_stored_json_reads_text_and_leaves_decoded_values() -> None:
    assert stored_json('{"a": "b"}') == {"a": "b"}
    assert stored_json({"a": "b"}) == {"a": "b"}


async def test_none_is_bound_as_sql_null(services: Services) -> None:
    """SQLite binds None through an adapter registered for speed (kit.db); it must stay SQL NULL, not a
    string or a zero, for parameters of every kind of statement."""
    async with services.db.transaction(write=False) as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT CAST(:value AS TEXT) IS NULL AS is_null, "
                    "COALESCE(CAST(:value AS TEXT), 'fallback') AS coalesced"
                ),
                {"value": None},
            )
        ).one()
    assert row.is_null in (True, 1)
    assert row.coalesced == "fallback"


class HandedOff:
    """A ``write_async`` that commits through something else (as the log writer's store process does):
    here a transaction of the database's own, on a thread, while the committer holds the turn to write."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.groups: list[list[str]] = []

    async def __call__(self, new: Sequence[Thread]) -> None:
        self.groups.append([thread.id for thread in new])
        await self.services.db.run_sync(lambda connection: insert_threads(connection, new))


async def test_a_handed_off_group_is_committed_together_and_its_refused_item_retried_alone(
    services: Services, tenant: Tenant
) -> None:
    handed_off = HandedOff(services)
    committer: GroupCommit[Thread, None] = GroupCommit(services.db, write_async=handed_off, name="test")
    await check_refused_item_retried_alone(services, tenant, committer, handed_off.groups)


async def test_a_handed_off_failure_that_is_not_the_datas_fails_its_group_and_the_committer_goes_on(
    services: Services, tenant: Tenant
) -> None:
    handed_off = HandedOff(services)
    calls = 0

    async def broken_once(new: Sequence[Thread]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("the store went away")
        await handed_off(new)

    committer: GroupCommit[Thread, None] = GroupCommit(services.db, write_async=broken_once, name="test")
    with pytest.raises(OSError, match="went away"):
        await create(committer, tenant, "lost")
    later = await create(committer, tenant, "kept")
    assert await committed_ids(services, tenant.org_id) == [later.id]


async def test_a_committer_takes_exactly_one_way_to_write(services: Services) -> None:
    with pytest.raises(TypeError, match="exactly one"):
        GroupCommit(services.db, name="neither")
    with pytest.raises(TypeError, match="exactly one"):
        GroupCommit(services.db, Recording(), write_async=HandedOff(services), name="both")
