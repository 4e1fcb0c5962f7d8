"""The SDK's automations and billing resources: the requests they send (a recording transport), then against
one real server process per storage shape."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import Backend
from tests.support import ServerProcess, Tenant, running_server
from threadline.billing import ledger
from threadline.client import BadRequestError, NotFoundError, Threadline
from threadline.kit.db import Database
from threadline.organizations.service import create_organization


def recording(*responses: httpx.Response) -> tuple[Threadline, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return Threadline("sk_test", "http://api.test/v1", transport=httpx.MockTransport(handle)), seen


def sent(requests: list[httpx.Request]) -> list[tuple[str, str, dict[str, str], Any]]:
    return [
        (r.method, r.url.path, dict(r.url.params), json.loads(r.content) if r.content else None)
        for r in requests
    ]


def test_automation_requests() -> None:
    automation = {"id": "aut_1"}
    client, seen = recording(
        httpx.Response(201, json=automation),
        httpx.Response(201, json=automation),
        httpx.Response(200, json={"data": [automation], "nextCursor": "c2"}),
        httpx.Response(200, json={"data": [{"id": "aut_0"}], "nextCursor": None}),
        httpx.Response(200, json={"data": [], "nextCursor": None}),
        httpx.Response(200, json=automation),
        httpx.Response(200, json=automation),
        httpx.Response(200, json=automation),
        httpx.Response(201, json={"id": "run_1", "automationId": "aut_1"}),
    )
    schedule = {"type": "schedule", "cron": "@daily"}
    action = {"prompt": "Summarise", "threadId": "thr_1"}
    assert client.automations.create(name="Daily", trigger=schedule, action=action) == automation
    client.automations.create(name="Off", trigger=schedule, action=action, enabled=False)
    assert [a["id"] for a in client.automations.iterate()] == ["aut_1", "aut_0"]
    page = client.automations.list(limit=5, cursor="c9")
    assert page.data == [] and page.next_cursor is None
    client.automations.get("aut_1")
    client.automations.update("aut_1", enabled=True, action={"prompt": "Again"})
    client.automations.delete("aut_1")
    assert client.automations.trigger("aut_1") == {"id": "run_1", "automationId": "aut_1"}
    assert sent(seen) == [
        ("POST", "/v1/automations", {}, {"name": "Daily", "trigger": schedule, "action": action}),
        (
            "POST",
            "/v1/automations",
            {},
            {"name": "Off", "trigger": schedule, "action": action, "enabled": False},
        ),
        ("GET", "/v1/automations", {"limit": "100"}, None),
        ("GET", "/v1/automations", {"limit": "100", "cursor": "c2"}, None),
        ("GET", "/v1/automations", {"limit": "5", "cursor": "c9"}, None),
        ("GET", "/v1/automations/aut_1", {}, None),
        ("PATCH", "/v1/automations/aut_1", {}, {"enabled": True, "action": {"prompt": "Again"}}),
        ("DELETE", "/v1/automations/aut_1", {}, None),
        ("POST", "/v1/automations/aut_1/trigger", {}, None),
    ]


def ledger_page(ids: list[str], page: int, total_pages: int) -> httpx.Response:
    pagination = {"page": page, "limit": 100, "totalPages": total_pages, "total": 0}
    return httpx.Response(200, json={"data": [{"id": i} for i in ids], "pagination": pagination})


def test_billing_requests_and_page_walk() -> None:
    client, seen = recording(
        httpx.Response(200, json={"balance": 7, "updatedAt": None}),
        ledger_page(["t9"], 3, 4),
        # Walking: an entry written meanwhile pushes t5 onto page 2 again; it is given once.
        ledger_page(["t6", "t5"], 1, 2),
        ledger_page(["t5", "t4"], 2, 3),
        ledger_page(["t3"], 3, 3),
        ledger_page([], 1, 0),
    )
    assert client.billing.balance() == {"balance": 7, "updatedAt": None}
    assert client.billing.transactions(page=3, limit=1)["data"] == [{"id": "t9"}]
    assert [t["id"] for t in client.billing.iterate_transactions()] == ["t6", "t5", "t4", "t3"]
    assert list(client.billing.iterate_transactions()) == []
    assert [(r.method, r.url.path, dict(r.url.params)) for r in seen] == [
        ("GET", "/v1/billing/balance", {}),
        ("GET", "/v1/billing/transactions", {"page": "3", "limit": "1"}),
        ("GET", "/v1/billing/transactions", {"page": "1", "limit": "100"}),
        ("GET", "/v1/billing/transactions", {"page": "2", "limit": "100"}),
        ("GET", "/v1/billing/transactions", {"page": "3", "limit": "100"}),
        ("GET", "/v1/billing/transactions", {"page": "1", "limit": "100"}),
    ]


@dataclass(frozen=True)
class Served:
    server: ServerProcess
    db: Database

    async def organization(self, name: str) -> Tenant:
        async with self.db.transaction() as conn:
            return Tenant(await create_organization(conn, name))

    @contextmanager
    def sdk(self, tenant: Tenant) -> Iterator[Threadline]:
        with Threadline(tenant.created.secret_value, f"{self.server.api_url}/v1") as client:
            yield client


@pytest.fixture(scope="module")
async def served(backend: Backend) -> AsyncIterator[Served]:
    """One server for the module's real-server tests; it executes runs itself in both shapes."""
    settings = backend.fresh()
    db = Database(settings.resolved_database_url)
    try:
        with running_server({**backend.env(settings), "THREADLINE_RUN_EXECUTION": "server"}) as server:
            yield Served(server, db)
    finally:
        await db.dispose()


async def test_automations_against_a_server(served: Served) -> None:
    tenant = await served.organization("SDK automations")
    with served.sdk(tenant) as client:
        thread = client.threads.create(title="Incidents")
        nightly = client.automations.create(
            name="Nightly",
            trigger={"type": "schedule", "cron": "30 2 * * *", "timezone": "Europe/Berlin"},
            action={"prompt": "#notools Summarise", "threadId": thread["id"]},
        )
        assert nightly["enabled"] is True and nightly["nextRunAt"] is not None
        assert nightly["action"] == {"prompt": "#notools Summarise", "threadId": thread["id"], "model": None}
        watch = client.automations.create(
            name="Watch",
            trigger={"type": "log", "projectId": tenant.project_id, "contains": "refused"},
            action={"prompt": "#notools Why?"},
            enabled=False,
        )
        assert watch["enabled"] is False and watch["nextRunAt"] is None
        assert watch["trigger"] == {
            "type": "log",
            "projectId": tenant.project_id,
            "level": "error",
            "contains": "refused",
            "cooldownSeconds": 300,
        }

        first = client.automations.list(limit=1)
        assert [a["id"] for a in first.data] == [watch["id"]] and first.next_cursor is not None
        rest = client.automations.list(limit=1, cursor=first.next_cursor)
        assert [a["id"] for a in rest.data] == [nightly["id"]] and rest.next_cursor is None
        assert [a["id"] for a in client.automations.iterate()] == [watch["id"], nightly["id"]]
        assert client.automations.get(nightly["id"]) == nightly

        renamed = client.automations.update(watch["id"], name="Watch refusals", enabled=True)
        assert (renamed["name"], renamed["enabled"], renamed["trigger"]) == (
            "Watch refusals",
            True,
            watch["trigger"],
        )
        hourly = client.automations.update(watch["id"], trigger={"type": "schedule", "cron": "@hourly"})
        assert hourly["trigger"] == {"type": "schedule", "cron": "@hourly", "timezone": "UTC"}
        assert hourly["nextRunAt"] is not None and hourly["name"] == "Watch refusals"

        run = client.automations.trigger(nightly["id"])
        assert run["id"].startswith("run_") and run["automationId"] == nightly["id"]
        assert run["threadId"] == thread["id"] and run["metadata"] == {"trigger": "manual"}
        assert client.automations.get(nightly["id"])["lastTriggeredAt"] is not None

        with pytest.raises(BadRequestError) as refused:
            client.automations.create(name="No cron", trigger={"type": "schedule"}, action={"prompt": "x"})
        assert refused.value.status == 400 and "trigger.cron" in str(refused.value)
        with pytest.raises(BadRequestError):
            client.automations.update(nightly["id"], name=None)

        assert client.automations.delete(nightly["id"])["id"] == nightly["id"]
        with pytest.raises(NotFoundError):
            client.automations.get(nightly["id"])
        with pytest.raises(NotFoundError):
            client.automations.trigger(nightly["id"])
        assert [a["id"] for a in client.automations.iterate()] == [watch["id"]]
        assert client.runs.get(run["id"])["automationId"] == nightly["id"]


async def test_billing_against_a_server(served: Served) -> None:
    tenant = await served.organization("SDK billing")
    with served.sdk(tenant) as client:
        assert client.billing.balance() == {"balance": 0, "updatedAt": None}
        empty = client.billing.transactions()
        assert empty == {"data": [], "pagination": {"page": 1, "limit": 20, "totalPages": 0, "total": 0}}
        assert list(client.billing.iterate_transactions()) == []

        async with served.db.transaction() as conn:  # what `threadline billing grant` writes
            granted = [
                await ledger.LedgerRepository(conn, tenant.org_id).post("credit", amount, f"grant {amount}")
                for amount in (10, 20)
            ]
        assert [g.balance_after for g in granted] == [10, 30]
        assert client.billing.balance()["balance"] == 30
        page = client.billing.transactions(page=1, limit=1)
        assert page["pagination"] == {"page": 1, "limit": 1, "totalPages": 2, "total": 2}
        assert [(t["id"], t["amount"], t["balanceAfter"]) for t in page["data"]] == [(granted[1].id, 20, 30)]
        assert [t["id"] for t in client.billing.iterate_transactions()] == [granted[1].id, granted[0].id]

        # A run with tokens is charged in its ending transaction: one debit naming the run.
        automation = client.automations.create(
            name="Charged", trigger={"type": "schedule", "cron": "@yearly"}, action={"prompt": "#notools"}
        )
        run = client.automations.trigger(automation["id"])
        events = list(client.runs.stream(run["id"]))
        assert events[-1]["type"] == "run_completed" and events[-1]["status"] == "completed"
        debit = client.billing.transactions()["data"][0]
        assert (debit["type"], debit["runId"]) == ("debit", run["id"])
        assert debit["amount"] < 0 and debit["balanceAfter"] == 30 + debit["amount"]
        assert client.billing.balance() == {"balance": debit["balanceAfter"], "updatedAt": debit["createdAt"]}
        assert [t["id"] for t in client.billing.iterate_transactions()] == [
            debit["id"],
            granted[1].id,
            granted[0].id,
        ]
