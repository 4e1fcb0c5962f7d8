"""Log triggers: an ingested record that matches (project, level at or above, text) starts a run with the
record in its input, at most once per cooldown; on a controllable clock."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Connection

from tests.automations.helpers import automation_runs, create, get, on_log, runs_per_automation
from tests.support import Tenant
from threadline.automations import repository, service
from threadline.kit.clock import ManualClock
from threadline.kit.statements import InsertOrIgnore, insert_or_ignore
from threadline.runtime import Services


async def ingest(intake: httpx.AsyncClient, tenant: Tenant, *records: dict[str, Any]) -> None:
    response = await intake.post("/v1/logs", headers=tenant.public, json=list(records))
    assert response.status_code == 202, response.text


async def fired(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, automation_id: str
) -> list[Any]:
    await services.log_triggers.settle()
    return await automation_runs(client, tenant, automation_id)


async def test_a_matching_record_starts_a_run_with_the_record(
    client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    created = await create(
        client, tenant, on_log(projectId=tenant.project_id, level="error", contains="timeout")
    )
    await ingest(
        intake,
        tenant,
        {"message": "upstream timeout", "level": "info"},  # below the level
        {"message": "disk full", "level": "error"},  # no "timeout"
    )
    assert await fired(client, tenant, services, created["id"]) == []
    await ingest(
        intake, tenant, {"message": "DB Timeout after 30s", "level": "fatal", "attributes": {"db": "main"}}
    )
    runs = await fired(client, tenant, services, created["id"])
    assert len(runs) == 1
    assert runs[0]["metadata"] == {"trigger": "log"}
    messages = (await client.get(f"/v1/threads/{runs[0]['threadId']}/messages", headers=tenant.secret)).json()
    text = messages["data"][0]["content"]
    assert text.startswith("Investigate this error.\n\n")
    record = json.loads(text.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
    logged = (await client.get("/v1/logs", headers=tenant.secret, params={"q": "Timeout"})).json()["data"][0]
    assert record == {
        "id": logged["id"], "projectId": tenant.project_id, "level": "fatal",
        "message": "DB Timeout after 30s", "timestamp": logged["timestamp"], "attributes": {"db": "main"},
        "traceId": None, "spanId": None,
    }  # fmt: skip
    assert (await get(client, tenant, created["id"]))["lastTriggeredAt"] == "2026-11-21T09:59:30.000Z"


async def test_cooldown(
    client: httpx.AsyncClient,
    intake: httpx.AsyncClient,
    tenant: Tenant,
    services: Services,
    clock: ManualClock,
) -> None:
    created = await create(client, tenant, on_log(cooldownSeconds=60))
    await ingest(intake, tenant, *({"message": f"boom {i}", "level": "error"} for i in range(50)))
    assert len(await fired(client, tenant, services, created["id"])) == 1
    clock.advance(59)
    await ingest(intake, tenant, {"message": "boom again", "level": "error"})
    assert len(await fired(client, tenant, services, created["id"])) == 1
    clock.advance(1)
    await ingest(intake, tenant, {"message": "boom once more", "level": "error"})
    runs = await fired(client, tenant, services, created["id"])
    assert len(runs) == 2
    assert (await get(client, tenant, created["id"]))["lastTriggeredAt"] == "2026-11-21T10:00:30.000Z"


async def test_what_does_not_match(
    client: httpx.AsyncClient,
    intake: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
    services: Services,
) -> None:
    other_project = (await client.post("/v1/projects", headers=tenant.secret, json={"name": "b"})).json()
    created = await create(client, tenant, on_log(projectId=tenant.project_id, cooldownSeconds=0))
    disabled = await create(client, tenant, {**on_log(cooldownSeconds=0), "enabled": False})
    key = await client.post(
        "/v1/keys",
        headers=tenant.secret,
        json={"name": "b", "type": "public", "projectId": other_project["id"]},
    )
    assert key.status_code == 201, key.text
    await ingest(intake, other_tenant, {"message": "theirs", "level": "error"})
    response = await intake.post(
        "/v1/logs",
        headers={"x-service-key": key.json()["key"]},
        json={"message": "other project", "level": "error"},
    )
    assert response.status_code == 202
    response = await intake.post(
        "/v1/events", headers=tenant.public, json={"name": "error", "properties": {"level": "error"}}
    )
    assert response.status_code == 202, response.text
    assert await fired(client, tenant, services, created["id"]) == []
    assert await fired(client, tenant, services, disabled["id"]) == []
    # Deleted, it stops at once in this process.
    await client.delete(f"/v1/automations/{created['id']}", headers=tenant.secret)
    await ingest(intake, tenant, {"message": "mine", "level": "error"})
    assert await fired(client, tenant, services, created["id"]) == []


async def test_changes_apply_to_the_next_record(
    client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    created = await create(client, tenant, on_log(level="fatal", cooldownSeconds=0))
    await ingest(intake, tenant, {"message": "an error", "level": "error"})
    assert await fired(client, tenant, services, created["id"]) == []
    response = await client.patch(
        f"/v1/automations/{created['id']}",
        headers=tenant.secret,
        json={"trigger": {"type": "log", "level": "warn", "cooldownSeconds": 0}},
    )
    assert response.status_code == 200
    await ingest(intake, tenant, {"message": "an error", "level": "error"})
    assert len(await fired(client, tenant, services, created["id"])) == 1


async def owe(
    services: Services, tenant: Tenant, automation_id: str, message: str, clock: ManualClock
) -> None:
    """A firing owed as the log writer records it with a matching record (in its own transaction here)."""
    record = {"id": "log_x", "message": message}
    firing = {"automation_id": automation_id, "organization_id": tenant.org_id, "record": record,
              "matched_at": clock.now()}  # fmt: skip
    insert = insert_or_ignore(services.db.dialect_name)
    await services.db.write_session(lambda connection: _owe(connection, firing, insert))


def _owe(connection: Connection, firing: dict[str, Any], insert: InsertOrIgnore) -> None:
    with connection.begin():
        repository.owe_firings(connection, [firing], insert)


async def test_concurrent_firings_settle_an_owed_firing_once(
    client: httpx.AsyncClient,
    tenant: Tenant,
    services: Services,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many processes (here: transactions on separate connections) settling one automation's owed
    firing at once: exactly one run, and then nothing is owed."""

    async def no_sweep() -> None:
        """The app's own sweeper, woken by the automation's creation, would otherwise race the eight
        settlers below for the firing, and when it won none of them started the run."""

    monkeypatch.setattr(services.log_triggers, "sweep", no_sweep)
    created = await create(client, tenant, on_log(cooldownSeconds=0))
    await owe(services, tenant, created["id"], "boom", clock)

    async def fire() -> object:
        async with services.db.transaction() as conn:
            run, _ = await service.fire_log(
                conn,
                services.signals,
                services.prices,
                created["id"],
                now=clock.now(),
                settings=services.settings,
            )
        return run

    started = await asyncio.gather(*(fire() for _ in range(8)))
    assert sum(run is not None for run in started) == 1
    assert (await runs_per_automation(services))[created["id"]] == 1
    async with services.db.transaction(write=False) as conn:
        assert created["id"] not in await repository.AutomationsAcrossOrganizations(conn).owed_firings()


async def test_a_firing_owed_by_a_stopped_process_is_fired(
    client: httpx.AsyncClient, tenant: Tenant, services: Services, clock: ManualClock
) -> None:
    """The record committed with its owed firing, then the process died before firing it: the sweep (at
    start, and every 30 s) fires it, with the record in the run's input."""
    created = await create(client, tenant, on_log())
    await owe(services, tenant, created["id"], "left behind", clock)
    await services.log_triggers.sweep()
    runs = await fired(client, tenant, services, created["id"])
    assert len(runs) == 1
    messages = (await client.get(f"/v1/threads/{runs[0]['threadId']}/messages", headers=tenant.secret)).json()
    assert '"message": "left behind"' in messages["data"][0]["content"]


async def test_the_owed_firing_is_written_with_the_record(
    client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, services: Services
) -> None:
    """Between the record's commit and its firing, the firing is in the database, not only in memory."""
    created = await create(client, tenant, on_log())
    committed: list[object] = []
    watch = services.log_triggers
    original = watch.committed
    watch.committed = committed.append  # type: ignore[method-assign,assignment]  # the firing never starts
    try:
        await ingest(intake, tenant, {"message": "kept", "level": "error"})
    finally:
        watch.committed = original  # type: ignore[method-assign]
    assert committed
    async with services.db.transaction(write=False) as conn:
        assert created["id"] in await repository.AutomationsAcrossOrganizations(conn).owed_firings()
    await services.log_triggers.sweep()
    assert len(await fired(client, tenant, services, created["id"])) == 1
