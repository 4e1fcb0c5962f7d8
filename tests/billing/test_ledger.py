"""The billing ledger: credits, one debit per run that used tokens, balances exact under concurrency,
page-based listing with totals, and enforcement on run creation; in both shapes."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.automations.helpers import create, get, schedule
from tests.runs.helpers import SLOW, get_run, start_run, wait_for_status
from tests.support import Tenant, assert_error, make_thread
from threadline.automations.tables import automations
from threadline.billing import ledger
from threadline.billing.prices import Prices
from threadline.config import ModelPrice
from threadline.kit.clock import utcnow
from threadline.provisioning import set_rate_limit, set_run_concurrency
from threadline.runs.tables import runs
from threadline.runtime import Services


async def grant(services: Services, tenant: Tenant, amount: int) -> ledger.Transaction:
    async with services.db.transaction() as conn:
        return await ledger.LedgerRepository(conn, tenant.org_id).post(
            "credit", amount, "test credit", now=services.clock.now()
        )


async def balance(client: httpx.AsyncClient, tenant: Tenant) -> int:
    response = await client.get("/v1/billing/balance", headers=tenant.secret)
    assert response.status_code == 200, response.text
    value: int = response.json()["balance"]
    return value


async def every_transaction(client: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    page = 1
    while True:
        response = await client.get(
            "/v1/billing/transactions", headers=tenant.secret, params={"page": page, "limit": 100}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        entries += body["data"]
        if page >= body["pagination"]["totalPages"]:
            return entries
        page += 1


async def all_ended(services: Services, run_ids: list[str]) -> None:
    """Waits (reading the database, not polling the API 100 times over) until none of the runs is active."""
    query = sa.select(sa.func.count()).where(runs.c.id.in_(run_ids), runs.c.status.in_(("queued", "running")))
    async with asyncio.timeout(120):
        while True:
            async with services.db.transaction(write=False) as conn:
                if (await conn.execute(query)).scalar_one() == 0:
                    return
            await asyncio.sleep(0.1)


class TestPrices:
    def test_lookup_order_and_rounding(self) -> None:
        prices = Prices(
            {
                "openai/gpt-4o": ModelPrice(input=Decimal("2.5"), output=Decimal(10)),
                "openai/*": ModelPrice(input=Decimal(1), output=Decimal(2)),
                "*": ModelPrice(input=Decimal(0), output=Decimal("0.5")),
            }
        )
        assert prices.charge("openai/gpt-4o", 1000, 1000) == 13
        assert prices.charge("openai/gpt-4o", 1, 0) == 1  # 0.0025 credits: rounded up
        assert prices.charge("openai/o3", 1500, 500) == 3  # 1.5 + 1.0
        assert prices.charge("offline/scripted", 1000, 0) == 0
        assert prices.charge("offline/scripted", 10, 2001) == 2  # 1.0005 -> 2
        assert Prices({}).charge("offline/scripted", 999, 1) == 1  # the built-in 1 per 1,000


class TestEndpoints:
    async def test_empty_ledger(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/billing/balance", headers=tenant.secret)
        assert response.status_code == 200
        assert response.json() == {"balance": 0, "updatedAt": None}
        response = await client.get("/v1/billing/transactions", headers=tenant.secret)
        assert response.json() == {
            "data": [], "pagination": {"page": 1, "limit": 20, "totalPages": 0, "total": 0},
        }  # fmt: skip

    async def test_pages_and_totals(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, services: Services
    ) -> None:
        made = [await grant(services, tenant, amount) for amount in range(1, 24)]  # 23 entries
        await grant(services, other_tenant, 1000)
        response = await client.get(
            "/v1/billing/transactions", headers=tenant.secret, params={"page": 3, "limit": 10}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["pagination"] == {"page": 3, "limit": 10, "totalPages": 3, "total": 23}
        assert [entry["amount"] for entry in body["data"]] == [3, 2, 1]  # newest first
        first = body["data"][-1]
        assert first == {
            "id": made[0].id, "type": "credit", "amount": 1, "balanceAfter": 1, "description": "test credit",
            "runId": None, "createdAt": first["createdAt"],
        }  # fmt: skip
        entries = await every_transaction(client, tenant)
        assert [entry["id"] for entry in entries] == [entry.id for entry in reversed(made)]
        assert entries[0]["balanceAfter"] == sum(range(1, 24)) == await balance(client, tenant)
        response = await client.get(
            "/v1/billing/transactions", headers=tenant.secret, params={"page": 4, "limit": 10}
        )
        assert response.json()["data"] == [] and response.json()["pagination"]["total"] == 23
        response = await client.get("/v1/billing/balance", headers=tenant.secret)
        assert response.json()["updatedAt"] is not None

    @pytest.mark.parametrize("params", [{"page": 0}, {"page": "two"}, {"limit": 101}, {"limit": 0}])
    async def test_bad_page_parameters(
        self, client: httpx.AsyncClient, tenant: Tenant, params: dict[str, Any]
    ) -> None:
        response = await client.get("/v1/billing/transactions", headers=tenant.secret, params=params)
        assert_error(
            response, 400, "BAD_REQUEST", operation_id="billing.transactions", reason="VALIDATION_FAILED"
        )

    async def test_requires_a_secret_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/billing/balance")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="billing.balance", missing=["Authorization"])
        response = await client.get("/v1/billing/transactions", headers=tenant.public)
        assert_error(
            response, 403, "FORBIDDEN", operation_id="billing.transactions", reason="PUBLIC_KEY_NOT_ALLOWED"
        )


class TestDebits:
    async def test_a_run_with_tokens_is_charged_once(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        await grant(services, tenant, 100)
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="What happened overnight?")
        ended = await wait_for_status(client, tenant, run["id"], "completed")
        usage = ended["usage"]
        assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0
        entries = await every_transaction(client, tenant)
        assert len(entries) == 2
        debit = entries[0]
        expected = services.prices.charge("offline/scripted", usage["inputTokens"], usage["outputTokens"])
        assert debit["type"] == "debit" and debit["amount"] == -expected and debit["runId"] == run["id"]
        assert debit["balanceAfter"] == 100 - expected == await balance(client, tenant)
        assert run["id"] in debit["description"] and "offline/scripted" in debit["description"]

    async def test_a_cancelled_run_pays_for_what_it_used(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        queued = await start_run(client, tenant, thread, input=SLOW)
        await client.post(f"/v1/runs/{queued['id']}/cancel", headers=tenant.secret)
        ended = await wait_for_status(client, tenant, queued["id"], "cancelled")
        entries = await every_transaction(client, tenant)
        used = ended["usage"]["inputTokens"] + ended["usage"]["outputTokens"]
        assert len([e for e in entries if e["runId"] == queued["id"]]) == (1 if used else 0)

    async def test_deleting_a_thread_charges_its_running_run(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#chunks=2000 #delay=20")  # a 40 s answer
        async with asyncio.timeout(15):
            while True:  # until its first turns (tool calls) have recorded usage
                current = await get_run(client, tenant, run["id"])
                if current["status"] == "running" and current["usage"]["inputTokens"]:
                    break
                await asyncio.sleep(0.05)
        response = await client.delete(f"/v1/threads/{thread}", headers=tenant.secret)
        assert response.status_code == 200, response.text
        debits = [e for e in await every_transaction(client, tenant) if e["runId"] == run["id"]]
        assert len(debits) == 1 and debits[0]["amount"] < 0

    async def test_concurrent_runs_keep_the_ledger_exact(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        """100 runs end at once (executed 16 at a time, some cancelled on the way): each has exactly one
        debit, the entries chain (each balanceAfter is the previous plus its amount), and their sum is
        the balance."""
        async with services.db.transaction() as conn:
            await set_rate_limit(conn, services.signals, tenant.org_id, 100_000, now=services.clock.now())
            await set_run_concurrency(
                conn, services.signals, tenant.org_id, 16, now=services.clock.now()
            )  # the process's slots
        await grant(services, tenant, 1_000_000)
        threads = await asyncio.gather(*(make_thread(client, tenant) for _ in range(100)))
        runs = await asyncio.gather(
            *(start_run(client, tenant, thread, input=f"question {i}") for i, thread in enumerate(threads))
        )
        for run in runs[::10]:
            await client.post(f"/v1/runs/{run['id']}/cancel", headers=tenant.secret)
        await all_ended(services, [run["id"] for run in runs])
        ended = [await get_run(client, tenant, run["id"]) for run in runs]
        assert {run["status"] for run in ended} <= {"completed", "cancelled"}
        entries = await every_transaction(client, tenant)
        debits = [entry for entry in entries if entry["type"] == "debit"]
        used = {r["id"] for r in ended if r["usage"]["inputTokens"] + r["usage"]["outputTokens"] > 0}
        assert sorted(entry["runId"] for entry in debits) == sorted(used)
        assert len(used) >= 90
        assert sum(entry["amount"] for entry in entries) == await balance(client, tenant)
        # Listed newest first in the order the balance moved: each entry is the previous one plus its amount.
        for newer, older in itertools.pairwise(entries):
            assert newer["balanceAfter"] == older["balanceAfter"] + newer["amount"]


class TestEnforcement:
    async def test_runs_are_refused_without_credits(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        thread = await make_thread(client, tenant)
        first = await start_run(client, tenant, thread)  # enforcement off: the balance may go negative
        await wait_for_status(client, tenant, first["id"], "completed")
        assert await balance(client, tenant) < 0
        response = await client.patch("/v1/settings", headers=tenant.secret, json={"billingEnforced": True})
        assert response.status_code == 200 and response.json()["billingEnforced"] is True
        response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json={})
        assert_error(response, 409, "CONFLICT", operation_id="runs.create", reason="INSUFFICIENT_CREDITS")
        await grant(services, tenant, 1 - await balance(client, tenant))  # to exactly 1
        second = await start_run(client, tenant, thread)
        await wait_for_status(client, tenant, second["id"], "completed")
        response = await client.post(f"/v1/threads/{thread}/runs", headers=tenant.secret, json={})
        assert_error(response, 409, "CONFLICT", operation_id="runs.create", reason="INSUFFICIENT_CREDITS")

    async def test_automations_record_the_refusal(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        await client.patch("/v1/settings", headers=tenant.secret, json={"billingEnforced": True})
        created = await create(client, tenant, schedule("* * * * *"))
        response = await client.post(f"/v1/automations/{created['id']}/trigger", headers=tenant.secret)
        assert_error(
            response, 409, "CONFLICT", operation_id="automations.trigger", reason="INSUFFICIENT_CREDITS"
        )
        assert services.scheduler is not None
        async with services.db.transaction() as conn:  # due now rather than at the next minute
            await conn.execute(
                automations.update()
                .where(automations.c.id == created["id"])
                .values(next_run_at=utcnow() - timedelta(seconds=1))
            )
        await services.scheduler.tick()
        after = await get(client, tenant, created["id"])
        assert after["lastError"]["code"] == "INSUFFICIENT_CREDITS"
        assert after["lastTriggeredAt"] is not None and after["nextRunAt"] > after["lastTriggeredAt"]
        # Not left to fire every minute in the later tests that share this database.
        await client.delete(f"/v1/automations/{created['id']}", headers=tenant.secret)
