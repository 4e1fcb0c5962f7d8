"""The SDK's automations and billing resources: the requests they send (a recording transport), then against
one real server process per storage shape."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from threadline_client import BadRequestError, NotFoundError
from threadline_client.types import LogTrigger, RunCompleted, ScheduleTrigger

from tests.client.conftest import Served
from tests.client.wire import AUTOMATION, RUN, client_answering
from threadline.billing import ledger
from threadline.kit.clock import Clock


def sent(requests: list[httpx.Request]) -> list[tuple[str, str, dict[str, str], Any]]:
    return [
        (r.method, r.url.path, dict(r.url.params), json.loads(r.content) if r.content else None)
        for r in requests
    ]


def test_automation_requests() -> None:
    automation = AUTOMATION
    client, seen = client_answering(
        httpx.Response(201, json=automation),
        httpx.Response(201, json=automation),
        httpx.Response(200, json={"data": [automation], "nextCursor": "c2"}),
        httpx.Response(200, json={"data": [{**automation, "id": "aut_0"}], "nextCursor": None}),
        httpx.Response(200, json={"data": [], "nextCursor": None}),
        httpx.Response(200, json=automation),
        httpx.Response(200, json=automation),
        httpx.Response(200, json=automation),
        httpx.Response(201, json={**RUN, "automationId": "aut_1"}),
    )
    schedule = {"type": "schedule", "cron": "@daily"}
    action = {"prompt": "Summarise", "threadId": "thr_1"}
    assert client.automations.create(name="Daily", trigger=schedule, action=action).to_dict() == automation
    client.automations.create(name="Off", trigger=schedule, action=action, enabled=False)
    assert [a.id for a in client.automations.list(limit=100)] == ["aut_1", "aut_0"]
    page = client.automations.list(limit=5, cursor="c9")
    assert page.data == [] and page.next_cursor is None
    client.automations.get("aut_1")
    client.automations.update("aut_1", enabled=True, action={"prompt": "Again"})
    client.automations.delete("aut_1")
    assert client.automations.trigger("aut_1").automation_id == "aut_1"
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
    entries = [
        {
            "id": i,
            "type": "credit",
            "amount": 1,
            "balanceAfter": 1,
            "description": "grant",
            "runId": None,
            "createdAt": "2026-11-25T00:00:00Z",
        }
        for i in ids
    ]
    return httpx.Response(200, json={"data": entries, "pagination": pagination})


def test_billing_requests_and_page_walk() -> None:
    client, seen = client_answering(
        httpx.Response(200, json={"balance": 7, "updatedAt": None}),
        ledger_page(["t9"], 3, 4),
        # Walking: an entry written meanwhile pushes t5 onto page 2 again; it is given once.
        ledger_page(["t6", "t5"], 1, 2),
        ledger_page(["t5", "t4"], 2, 3),
        ledger_page(["t3"], 3, 3),
        ledger_page([], 1, 0),
    )
    assert client.billing.balance().balance == 7
    page = client.billing.transactions(page=3, limit=1)
    assert [t.id for t in page.data] == ["t9"] and page.pagination is not None and page.pagination.page == 3
    assert page.has_next_page()  # page 3 of 4
    assert [t.id for t in client.billing.transactions(limit=100)] == ["t6", "t5", "t4", "t3"]
    assert list(client.billing.transactions(limit=100)) == []
    assert [(r.method, r.url.path, dict(r.url.params)) for r in seen] == [
        ("GET", "/v1/billing/balance", {}),
        ("GET", "/v1/billing/transactions", {"page": "3", "limit": "1"}),
        ("GET", "/v1/billing/transactions", {"page": "1", "limit": "100"}),
        ("GET", "/v1/billing/transactions", {"page": "2", "limit": "100"}),
        ("GET", "/v1/billing/transactions", {"page": "3", "limit": "100"}),
        ("GET", "/v1/billing/transactions", {"page": "1", "limit": "100"}),
    ]


async def test_automations_against_a_server(served: Served) -> None:
    tenant = await served.organization("SDK automations")
    with served.sdk(tenant) as client:
        thread = client.threads.create(title="Incidents")
        nightly = client.automations.create(
            name="Nightly",
            trigger={"type": "schedule", "cron": "30 2 * * *", "timezone": "Europe/Berlin"},
            action={"prompt": "#notools Summarise", "threadId": thread.id},
        )
        assert nightly.enabled is True and nightly.next_run_at is not None
        assert nightly.action.to_dict() == {
            "prompt": "#notools Summarise",
            "threadId": thread.id,
            "model": None,
            "agentId": None,
            "agentVersion": None,
            "responseFormat": None,
        }
        watch = client.automations.create(
            name="Watch",
            trigger={"type": "log", "projectId": tenant.project_id, "contains": "refused"},
            action={"prompt": "#notools Why?"},
            enabled=False,
        )
        assert watch.enabled is False and watch.next_run_at is None
        assert isinstance(watch.trigger, LogTrigger)
        assert watch.trigger.to_dict() == {
            "type": "log",
            "projectId": tenant.project_id,
            "level": "error",
            "contains": "refused",
            "cooldownSeconds": 300,
        }

        first = client.automations.list(limit=1)
        assert [a.id for a in first.data] == [watch.id] and first.next_cursor is not None
        rest = client.automations.list(limit=1, cursor=first.next_cursor)
        assert [a.id for a in rest.data] == [nightly.id] and rest.next_cursor is None
        assert [a.id for a in first] == [watch.id, nightly.id]
        assert client.automations.get(nightly.id) == nightly

        renamed = client.automations.update(watch.id, name="Watch refusals", enabled=True)
        assert (renamed.name, renamed.enabled, renamed.trigger) == ("Watch refusals", True, watch.trigger)
        hourly = client.automations.update(watch.id, trigger={"type": "schedule", "cron": "@hourly"})
        assert isinstance(hourly.trigger, ScheduleTrigger)
        assert hourly.trigger.to_dict() == {"type": "schedule", "cron": "@hourly", "timezone": "UTC"}
        assert hourly.next_run_at is not None and hourly.name == "Watch refusals"

        run = client.automations.trigger(nightly.id)
        assert run.id.startswith("run_") and run.automation_id == nightly.id
        assert run.thread_id == thread.id and run.metadata == {"trigger": "manual"}
        assert client.automations.get(nightly.id).last_triggered_at is not None

        with pytest.raises(BadRequestError) as refused:
            client.automations.create(name="No cron", trigger={"type": "schedule"}, action={"prompt": "x"})
        assert refused.value.status == 400 and "trigger.cron" in str(refused.value)
        assert refused.value.operation_id == "automations.create"
        with pytest.raises(BadRequestError):
            client.automations.update(nightly.id, name=None)

        assert client.automations.delete(nightly.id).id == nightly.id
        with pytest.raises(NotFoundError):
            client.automations.get(nightly.id)
        with pytest.raises(NotFoundError):
            client.automations.trigger(nightly.id)
        assert [a.id for a in client.automations.list()] == [watch.id]
        assert client.runs.get(run.id).automation_id == nightly.id


async def test_billing_against_a_server(served: Served) -> None:
    tenant = await served.organization("SDK billing")
    with served.sdk(tenant) as client:
        assert client.billing.balance().to_dict() == {"balance": 0, "updatedAt": None}
        empty = client.billing.transactions()
        assert empty.data == [] and empty.pagination is not None
        assert empty.pagination.to_dict() == {"page": 1, "limit": 20, "totalPages": 0, "total": 0}
        assert list(empty) == []

        async with served.db.transaction() as conn:  # what `threadline billing grant` writes
            granted = [
                await ledger.LedgerRepository(conn, tenant.org_id).post(
                    "credit", amount, f"grant {amount}", now=Clock().now()
                )
                for amount in (10, 20)
            ]
        assert [g.balance_after for g in granted] == [10, 30]
        assert client.billing.balance().balance == 30
        page = client.billing.transactions(page=1, limit=1)
        assert page.pagination is not None
        assert page.pagination.to_dict() == {"page": 1, "limit": 1, "totalPages": 2, "total": 2}
        assert [(t.id, t.amount, t.balance_after) for t in page.data] == [(granted[1].id, 20, 30)]
        assert [t.id for t in page] == [granted[1].id, granted[0].id]  # page 1, then page 2

        # A run with tokens is charged in its ending transaction: one debit naming the run.
        automation = client.automations.create(
            name="Charged", trigger={"type": "schedule", "cron": "@yearly"}, action={"prompt": "#notools"}
        )
        run = client.automations.trigger(automation.id)
        events = list(client.runs.stream(run.id))
        assert isinstance(events[-1], RunCompleted) and events[-1].status == "completed"
        debit = client.billing.transactions().data[0]
        assert (debit.type, debit.run_id) == ("debit", run.id)
        assert debit.amount < 0 and debit.balance_after == 30 + debit.amount
        balance = client.billing.balance()
        assert (balance.balance, balance.updated_at) == (debit.balance_after, debit.created_at)
        assert [t.id for t in client.billing.transactions()] == [debit.id, granted[1].id, granted[0].id]
