"""Live tails share their reads: one feed per organization and filters per process (``telemetry.tail``).

The reads are counted by the tails' own counters (``feed_reads``, ``catch_up_reads``), not timed. The safety
re-read is pushed out of reach, so every read a test sees was caused by a commit. Both of SQLite's append
paths run them (conftest): the store process and inline appends announce their commits alike."""

from __future__ import annotations

import asyncio
import gc
import json
import types
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support import Tenant
from threadline.runtime import Services
from threadline.telemetry import tail
from threadline.telemetry.repository import LogFilters


@pytest.fixture(autouse=True)
def no_safety_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tail, "_POLL_SECONDS", 60.0)


async def send(intake: httpx.AsyncClient, tenant: Tenant, *messages: str) -> None:
    response = await intake.post("/v1/logs", json=[{"message": m} for m in messages], headers=tenant.public)
    assert response.status_code == 202, response.text


async def records(stream: AsyncIterator[bytes], count: int) -> list[dict[str, Any]]:
    """The next ``count`` records a tail sends (pings skipped), parsed."""
    found: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        while len(found) < count:
            chunk = (await anext(stream)).decode()
            for block in chunk.split("\n\n"):
                data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
                if data:
                    found.append(json.loads(data[0]))
    return found


async def open_tail(services: Services, tenant: Tenant, after_id: str | None = None) -> AsyncIterator[bytes]:
    stream = services.log_tails.follow(services.db, tenant.org_id, LogFilters(), after_id)
    assert (await anext(stream)).startswith(b"id: ")  # the starting position
    return stream


async def test_many_tails_of_one_organization_cost_one_read_per_commit(
    services: Services, intake: httpx.AsyncClient, tenant: Tenant
) -> None:
    tails = services.log_tails
    streams = [await open_tail(services, tenant) for _ in range(25)]
    try:
        assert tails.followed == 1
        await send(intake, tenant, "first")
        for stream in streams:
            assert [r["message"] for r in await records(stream, 1)] == ["first"]
        before = tails.feed_reads
        for i in range(5):
            await send(intake, tenant, f"r{i}")
            for stream in streams:
                assert [r["message"] for r in await records(stream, 1)] == [f"r{i}"]
        # Five commits, five reads, whatever the number of tails (each tail read alone: 125).
        assert tails.feed_reads - before == 5
        assert tails.catch_up_reads == 0
    finally:
        for stream in streams:
            await stream.aclose()
    assert tails.followed == 0  # the last tail gone, the feed and its task are gone


async def test_other_filters_and_organizations_have_feeds_of_their_own(
    services: Services, intake: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    tails = services.log_tails
    mine = await open_tail(services, tenant)
    warnings = services.log_tails.follow(services.db, tenant.org_id, LogFilters(level="warn"), None)
    await anext(warnings)
    theirs = await open_tail(services, other_tenant)
    try:
        assert tails.followed == 3
        response = await intake.post(
            "/v1/logs", json=[{"message": "a"}, {"message": "b", "level": "error"}], headers=tenant.public
        )
        assert response.status_code == 202
        assert [r["message"] for r in await records(mine, 2)] == ["a", "b"]
        assert [r["message"] for r in await records(warnings, 1)] == ["b"]
        await send(intake, other_tenant, "theirs")
        assert [r["message"] for r in await records(theirs, 1)] == ["theirs"]
    finally:
        for stream in (mine, warnings, theirs):
            await stream.aclose()


async def test_a_tail_behind_the_feed_catches_up_alone_exactly(
    services: Services,
    client: httpx.AsyncClient,
    intake: httpx.AsyncClient,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tail that resumes from before what the feed holds, and one the feed outran (it keeps only a few
    frames here), each read alone until caught up: every record once, in order."""
    monkeypatch.setattr(tail, "_KEEP_FRAMES", 2)
    tails = services.log_tails
    await send(intake, tenant, "a", "b", "c")
    listed = (await client.get("/v1/logs", headers=tenant.secret)).json()["data"]
    [first] = [record["id"] for record in listed if record["message"] == "a"]
    leader = await open_tail(services, tenant)
    resumed = None
    try:
        await send(intake, tenant, "d")
        assert [r["message"] for r in await records(leader, 1)] == ["d"]
        resumed = await open_tail(services, tenant, first)
        assert [r["message"] for r in await records(resumed, 3)] == ["b", "c", "d"]
        assert tails.catch_up_reads >= 1 and tails.followed == 1

        # Six at once: the feed keeps the last two, so a tail it outran catches up by itself.
        await send(intake, tenant, *(f"n{i}" for i in range(6)))
        await send(intake, tenant, "last")
        expected = [f"n{i}" for i in range(6)] + ["last"]
        assert [r["message"] for r in await records(resumed, 7)] == expected
        assert [r["message"] for r in await records(leader, 7)] == expected
        await send(intake, tenant, "after")
        assert [r["message"] for r in await records(resumed, 1)] == ["after"]
        assert [r["message"] for r in await records(leader, 1)] == ["after"]
    finally:
        await leader.aclose()
        if resumed is not None:
            await resumed.aclose()


def _open_inner_tails() -> list[types.AsyncGeneratorType[bytes, None]]:
    return [
        found
        for found in gc.get_objects()
        if isinstance(found, types.AsyncGeneratorType)
        and found.ag_code is tail.LogTails._tail.__code__
        and found.ag_frame is not None
    ]


async def test_closing_a_tail_closes_its_inner_generator_in_the_same_task(
    services: Services, intake: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The inner ``_tail`` is closed by ``follow``'s own close, not left suspended for the garbage collector
    to close later from a task of its own (the cause of the suite's "async generator already executing")."""
    stream = await open_tail(services, tenant)
    await send(intake, tenant, "inside")
    assert [r["message"] for r in await records(stream, 1)] == ["inside"]
    assert len(_open_inner_tails()) == 1
    await stream.aclose()  # type: ignore[attr-defined]
    assert _open_inner_tails() == []
