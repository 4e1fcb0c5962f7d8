"""Reading telemetry back: ``GET /v1/logs`` filters and cursors, the live tail, retention."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import POSTGRES_URL, Backend
from tests.support import Tenant, assert_error, listed
from threadline.config import normalize_database_url
from threadline.kit.clock import isoformat
from threadline.kit.db import Database
from threadline.kit.hours import hour_of
from threadline.provisioning import create_organization
from threadline.runtime import Services
from threadline.storage.migrate import upgrade
from threadline.telemetry import housekeeping, partitions, repository, tail
from threadline.telemetry.partitions import PartitionedRetention
from threadline.telemetry.tables import log_counts, log_records


@pytest.fixture
def log_store() -> str:
    """One append path (conftest): reads and retention do not depend on how the records were appended."""
    return "process"


async def send(intake: httpx.AsyncClient, tenant: Tenant, records: list[dict[str, Any]]) -> None:
    response = await intake.post("/v1/logs", json=records, headers=tenant.public)
    assert response.status_code == 202, response.text


class TestList:
    async def test_newest_first_with_every_field(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "first"}, {"message": "second", "level": "error"}])
        response = await client.get("/v1/logs", headers=tenant.secret)
        body = response.json()
        assert [r["message"] for r in body["data"]] == ["second", "first"]
        assert body["nextCursor"] is None
        record = body["data"][0]
        assert set(record) == {
            "id", "projectId", "kind", "message", "level", "timestamp", "attributes", "traceId", "spanId",
            "receivedAt", "name", "properties", "distinctId",
        }  # fmt: skip
        assert record["id"].startswith("log_") and record["projectId"] == tenant.project_id
        assert record["kind"] == "log" and record["level"] == "error"

    async def test_cursor_walk_returns_each_record_once(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": f"m{n}"} for n in range(45)])
        walked = await listed(client, tenant, limit=10)
        assert [r["message"] for r in walked] == [f"m{n}" for n in reversed(range(45))]

    async def test_level_is_a_minimum(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        levels = ["trace", "debug", "info", "warn", "error", "fatal"]
        await send(intake, tenant, [{"message": level, "level": level} for level in levels])
        found = await listed(client, tenant, level="warn")
        assert sorted(r["level"] for r in found) == ["error", "fatal", "warn"]

    async def test_kind_and_project(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "a log"}])
        response = await intake.post("/v1/events", json={"name": "signup"}, headers=tenant.public)
        assert response.status_code == 202
        events = await listed(client, tenant, kind="event")
        assert [(e["kind"], e["name"]) for e in events] == [("event", "signup")]
        assert len(await listed(client, tenant, projectId=tenant.project_id)) == 2
        assert await listed(client, tenant, projectId="proj_" + "0" * 26) == []

    async def test_text_query_syntax(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        messages = [
            "payment failed: card declined",
            "payment succeeded",
            "Connection REFUSED by db-primary",
            "deployment finished",
        ]
        await send(intake, tenant, [{"message": m} for m in messages])

        async def matching(q: str) -> set[str]:
            return {r["message"] for r in await listed(client, tenant, q=q)}

        assert await matching("payment") == set(messages[:2])
        assert await matching("payment -declined") == {"payment succeeded"}
        assert await matching('"connection refused"') == {messages[2]}
        assert await matching("deploy OR declined") == {messages[0], messages[3]}
        assert await matching("100%_literal") == set()  # LIKE wildcards are escaped, not interpreted

    async def test_since_and_until_select_by_receipt(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "old", "timestamp": "2001-01-01T00:00:00Z"}])
        first = (await listed(client, tenant))[0]
        received = datetime.fromisoformat(first["receivedAt"])
        assert first["timestamp"] == "2001-01-01T00:00:00.000Z"  # its own time, kept as sent
        later = isoformat(received + timedelta(milliseconds=1))
        earlier = isoformat(received - timedelta(seconds=1))
        assert [r["message"] for r in await listed(client, tenant, since=earlier)] == ["old"]
        assert await listed(client, tenant, since=later) == []
        assert [r["message"] for r in await listed(client, tenant, until=later)] == ["old"]
        assert await listed(client, tenant, until=earlier) == []

    async def test_filtered_pages_stop_at_the_scan_window_and_resume(
        self,
        client: httpx.AsyncClient,
        intake: httpx.AsyncClient,
        tenant: Tenant,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A rare match costs a bounded scan per page; walking nextCursor still finds every match."""
        monkeypatch.setattr(repository, "SCAN_WINDOW", 5)
        records = [{"message": "needle" if n in (2, 8) else f"hay {n}"} for n in range(20)]
        await send(intake, tenant, records)
        first = (await client.get("/v1/logs", params={"q": "needle"}, headers=tenant.secret)).json()
        assert first["data"] == [] and first["nextCursor"] is not None
        assert [r["message"] for r in await listed(client, tenant, q="needle")] == ["needle", "needle"]

    async def test_other_organizations_records_are_invisible(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "private"}])
        assert await listed(client, other_tenant) == []
        assert await listed(client, other_tenant, q="private") == []

    @pytest.mark.parametrize(
        "params",
        [
            {"level": "loud"},
            {"kind": "metric"},
            {"since": "yesterday"},
            {"projectId": "nope"},
            {"cursor": "garbage"},
            {"q": "-only"},
            {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
        ],
    )
    async def test_bad_filters_are_400(
        self, client: httpx.AsyncClient, tenant: Tenant, params: dict[str, str]
    ) -> None:
        response = await client.get("/v1/logs", params=params, headers=tenant.secret)
        assert response.status_code == 400, response.text
        assert response.json()["operationId"] == "logs.list"

    async def test_public_key_is_403_and_no_key_401(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/logs", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="logs.list", reason="PUBLIC_KEY_NOT_ALLOWED")
        response = await client.get("/v1/logs/stream")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="logs.stream", missing=["Authorization"])


@asynccontextmanager
async def private_postgres() -> AsyncIterator[Database]:
    """A migrated PostgreSQL database of the test's own, dropped afterwards."""
    name = f"threadline_test_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(POSTGRES_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = normalize_database_url(POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}")
    db = Database(url)
    try:
        await asyncio.to_thread(upgrade, url)
        yield db
    finally:
        await db.dispose()
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def frames(text: str) -> list[tuple[str | None, str]]:
    """(id, data) of each SSE frame with data; comments and position-only frames skipped."""
    out = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        if "data" in fields:  # a frame with only an id sets the resume position; it is not an event
            out.append((fields.get("id"), fields["data"]))
    return out


class TestStream:
    """The tail ends by itself once ``until`` has passed, which lets a test read the whole response."""

    async def test_replays_since_then_ends_with_done(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "one"}, {"message": "two", "level": "warn"}])
        start = datetime.now(UTC) - timedelta(minutes=1)
        until = datetime.now(UTC) + timedelta(milliseconds=200)
        params = {"since": isoformat(start), "until": isoformat(until)}
        response = await client.get("/v1/logs/stream", params=params, headers=tenant.secret, timeout=10)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        got = frames(response.text)
        assert got[-1] == (None, "[DONE]")
        events = [json.loads(data) for _, data in got[:-1]]
        assert [e["message"] for e in events] == ["one", "two"]  # oldest first
        assert all(e["type"] == "log_record" for e in events)
        assert [event_id for event_id, _ in got[:-1]] == [e["cursor"] for e in events]

        # Resuming after the first frame (query cursor, then Last-Event-ID) sends only what follows.
        first_cursor = events[0]["cursor"]
        resumed = await client.get(
            "/v1/logs/stream", params={**params, "cursor": first_cursor}, headers=tenant.secret
        )
        assert [json.loads(d)["message"] for _, d in frames(resumed.text)[:-1]] == ["two"]
        resumed = await client.get(
            "/v1/logs/stream", params=params, headers={**tenant.secret, "Last-Event-ID": first_cursor}
        )
        assert [json.loads(d)["message"] for _, d in frames(resumed.text)[:-1]] == ["two"]

        filtered = await client.get(
            "/v1/logs/stream", params={**params, "level": "warn"}, headers=tenant.secret
        )
        assert [json.loads(d)["message"] for _, d in frames(filtered.text)[:-1]] == ["two"]

    async def test_other_organization_sees_nothing(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "private"}])
        params = {
            "since": isoformat(datetime.now(UTC) - timedelta(minutes=1)),
            "until": isoformat(datetime.now(UTC) + timedelta(milliseconds=100)),
        }
        response = await client.get("/v1/logs/stream", params=params, headers=other_tenant.secret)
        assert frames(response.text) == [(None, "[DONE]")]


class TestRetention:
    async def test_deletes_only_what_is_older_than_each_organizations_retention(
        self,
        client: httpx.AsyncClient,
        intake: httpx.AsyncClient,
        services: Services,
        tenant: Tenant,
        other_tenant: Tenant,
        backend: Backend,
    ) -> None:
        await send(intake, tenant, [{"message": "a"}, {"message": "b"}])
        await send(intake, other_tenant, [{"message": "c"}])
        patched = await client.patch("/v1/settings", json={"logRetentionDays": 1}, headers=tenant.secret)
        assert patched.status_code == 200, patched.text

        # Two days on: past the tenant's 1 day, within the other's default 30.
        report = await housekeeping.run_once(services.retention, now=datetime.now(UTC) + timedelta(days=2))
        assert report.deleted[tenant.org_id] == 2 and other_tenant.org_id not in report.deleted
        assert await listed(client, tenant) == []
        assert [r["message"] for r in await listed(client, other_tenant)] == ["c"]

        report = await housekeeping.run_once(services.retention, now=datetime.now(UTC) + timedelta(days=31))
        assert tenant.org_id not in report.deleted
        # Deleted, or on PostgreSQL dropped with its day's partition when today has one: whether it does
        # depends on which housekeeping ran earlier on the session's database, not on this test.
        dropped = bool(report.dropped_partitions)
        assert report.deleted.get(other_tenant.org_id) == 1 or (backend.name == "distributed" and dropped)
        ours = log_records.c.organization_id.in_([tenant.org_id, other_tenant.org_id])
        async with services.db.transaction(write=False) as conn:
            left = (await conn.execute(sa.select(sa.func.count()).where(ours))).scalar_one()
        assert left == 0

    @pytest.mark.distributed
    async def test_postgresql_keeps_daily_partitions_ahead_and_drops_expired_days(self) -> None:
        """On a database of its own: dropping every expired day would take the shared test database's
        partitions with it."""
        async with private_postgres() as db:
            now = datetime(2030, 3, 10, 12, tzinfo=UTC)
            retention = PartitionedRetention(db)
            report = await housekeeping.run_once(retention, now=now)
            expected = [partitions.partition_name((now + timedelta(days=d)).date()) for d in range(4)]
            assert report.created_partitions == expected
            async with db.transaction() as conn:
                made = await create_organization(conn, "retained", now=now)  # default retention: 30 days
                # Each day's hourly counts: the dropped days' go with their partitions.
                hours = [hour_of(now + timedelta(days=d)) for d in range(4)]
                await conn.execute(
                    sa.insert(log_counts),
                    [
                        {
                            "organization_id": made.organization.id,
                            "project_id": made.project.id,
                            "hour": hour,
                            "level": "info",
                            "kind": "log",
                            "records": 1,
                        }
                        for hour in hours
                    ],
                )
            report = await housekeeping.run_once(retention, now=now + timedelta(days=33))
            assert report.dropped_partitions == expected[:3]  # the fourth day is still within 30 days
            async with db.transaction(write=False) as conn:
                remaining = await partitions.existing(conn)
                counted = (await conn.execute(sa.select(log_counts.c.hour))).scalars().all()
            assert expected[3] in remaining and not set(expected[:3]) & remaining
            assert counted == hours[3:]


class TestHardening:
    async def test_until_inside_the_records_millisecond_includes_it(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        """Ids carry whole milliseconds; a boundary half a millisecond after a record keeps it before."""
        await send(intake, tenant, [{"message": "edge"}])
        received = datetime.fromisoformat((await listed(client, tenant))[0]["receivedAt"])
        boundary = (received + timedelta(microseconds=500)).isoformat()
        assert [r["message"] for r in await listed(client, tenant, until=boundary)] == ["edge"]
        assert await listed(client, tenant, since=boundary) == []

    @pytest.mark.parametrize(
        "params",
        [
            {"since": "0001-01-01T00:00:00+01:00"},
            {"until": "9999-12-31T23:59:59-01:00"},
            {"since": "1960-01-01"},
        ],
    )
    async def test_out_of_range_times_are_400(
        self, client: httpx.AsyncClient, tenant: Tenant, params: dict[str, str]
    ) -> None:
        for path in ("/v1/logs", "/v1/logs/stream"):
            response = await client.get(path, params=params, headers=tenant.secret)
            assert response.status_code == 400, (path, response.text)

    async def test_literal_words_keep_their_punctuation(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await send(intake, tenant, [{"message": "ERR_TIMEOUT from 10.0.0.1"}, {"message": "err timeout"}])
        assert [r["message"] for r in await listed(client, tenant, q="err_timeout")] == [
            "ERR_TIMEOUT from 10.0.0.1"
        ]
        assert [r["message"] for r in await listed(client, tenant, q="10.0.0.1")] == [
            "ERR_TIMEOUT from 10.0.0.1"
        ]

    async def test_stream_starts_with_its_position_and_stays_ascii(
        self, client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        """The first frame is an id without data (where to resume); a U+2028 in a message is escaped, so
        readers that split lines like str.splitlines cannot cut a frame."""
        await send(intake, tenant, [{"message": "line\u2028separator"}])
        params = {
            "since": isoformat(datetime.now(UTC) - timedelta(minutes=1)),
            "until": isoformat(datetime.now(UTC) + timedelta(milliseconds=100)),
        }
        response = await client.get("/v1/logs/stream", params=params, headers=tenant.secret)
        assert response.text.startswith("id: ") and response.text.split("\n", 2)[1] == ""
        assert "\u2028" not in response.text and "\\u2028" in response.text
        assert json.loads(frames(response.text)[0][1])["message"] == "line\u2028separator"

    async def test_heartbeat_flows_while_filtered_out_records_keep_waking_the_tail(
        self, services: Services, intake: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(tail, "HEARTBEAT_SECONDS", 0.3)
        monkeypatch.setattr(tail, "_POLL_SECONDS", 0.05)
        stream = services.log_tails.follow(
            services.db, tenant.org_id, repository.LogFilters(level="fatal"), None
        )
        assert (await anext(stream)).startswith(b"id: ")

        async def traffic() -> None:
            for _ in range(40):
                await send(intake, tenant, [{"message": "noise", "level": "info"}])
                await asyncio.sleep(0.02)

        sender = asyncio.create_task(traffic())
        try:
            assert await asyncio.wait_for(anext(stream), 5) == b": ping\n\n"
        finally:
            sender.cancel()
            await stream.aclose()


async def test_housekeeping_stops_when_cancelled_even_if_the_driver_turns_it_into_an_error(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncpg can answer a cancelled query with an error of its own; the periodic job must still stop
    (it once swallowed the cancellation and slept an hour, holding up the server's shutdown)."""
    started = asyncio.Event()

    async def run_once(_retention: object, _now: object) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("connection was closed in the middle of operation") from None

    monkeypatch.setattr(housekeeping, "run_once", run_once)
    job = asyncio.create_task(housekeeping.run_periodically(services.retention, services.clock))
    await started.wait()
    job.cancel()
    done, _ = await asyncio.wait({job}, timeout=2)
    assert job in done and job.cancelled()
