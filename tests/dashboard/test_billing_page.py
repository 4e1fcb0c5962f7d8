"""``/billing``: the balance and the ledger page by page, of the viewer's organization only."""

from __future__ import annotations

import pytest

from tests.dashboard.support import Dashboard
from tests.support import Tenant
from threadline.billing.ledger import LedgerRepository
from threadline.dashboard.pages import billing
from threadline.runtime import Services


async def grant(services: Services, tenant: Tenant, *amounts: int) -> None:
    async with services.db.transaction(write=True) as conn:
        for amount in amounts:
            await LedgerRepository(conn, tenant.org_id).post(
                "credit", amount, f"grant of {amount} <b>", now=services.clock.now()
            )


async def test_balance_and_ledger_page_by_page(
    dashboard: Dashboard,
    services: Services,
    tenant: Tenant,
    other_tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(billing, "PAGE_SIZE", 2)
    await grant(services, tenant, 100, 20, 3)
    await grant(services, other_tenant, 7777)
    first = await dashboard.get("/billing")
    assert first.status_code == 200
    assert '<div class="figure">123 <span class="label">credits</span></div>' in first.text
    assert "grant of 3 &lt;b&gt;" in first.text and "grant of 20" in first.text
    assert "grant of 100" not in first.text and "7777" not in first.text and "7,777" not in first.text
    assert "page 1 of 2" in first.text and 'href="/billing?page=2">Older entries' in first.text
    second = await dashboard.get("/billing", params={"page": "2"})
    assert "grant of 100" in second.text and "grant of 3 " not in second.text
    assert 'href="/billing?page=1">Newer entries' in second.text and "Older entries" not in second.text
    beyond = await dashboard.get("/billing", params={"page": "9"})
    assert beyond.status_code == 200 and "There is no page 9; the ledger has 2 pages." in beyond.text


@pytest.mark.parametrize("page", ["0", "-1", "two", "1000001"])
async def test_a_bad_page_number_is_explained(dashboard: Dashboard, page: str) -> None:
    response = await dashboard.get("/billing", params={"page": page})
    assert response.status_code == 400
    assert "Page must be a whole number from 1 to 1,000,000." in response.text


async def test_an_empty_ledger_says_how_credits_arrive(dashboard: Dashboard) -> None:
    response = await dashboard.get("/billing")
    assert "The ledger is empty." in response.text and "threadline billing grant" in response.text
