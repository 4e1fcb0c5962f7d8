"""``/billing``: the balance and the ledger, page by page, as ``GET /v1/billing/*`` read them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from threadline.billing import service
from threadline.billing.ledger import Transaction, ledger_by_bucket
from threadline.dashboard.charts import Chart, line
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.clock import Clock
from threadline.kit.db import Conn
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.pagination import PageParams, total_pages
from threadline.kit.timebuckets import TimeBuckets

router = APIRouter()

PAGE_SIZE = 25
_LAST_PAGE = 1_000_000  # as the API's page parameter allows


def _page_number(request: Request) -> int | None:
    raw = request.query_params.get("page", "").strip() or "1"
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= _LAST_PAGE else None


# The chart: the balance at the end of each of the last 30 days, over the newest entries at most.
_CHART_DAYS = 30
_CHART_ENTRIES = 10_000


class BillingServices(Protocol):
    clock: Clock


ServicesDep = Annotated[BillingServices, Depends(get_services)]


async def _credits_chart(conn: Conn, organization_id: str, now: datetime, balance: int) -> Chart:
    """A line of the balance after each day's last entry; a day without entries keeps the day before's
    (before the first counted entry: the balance that entry started from)."""
    days = TimeBuckets.covering(now - timedelta(days=_CHART_DAYS - 1), now, most=_CHART_DAYS)
    ledger, capped = await ledger_by_bucket(conn, organization_id, days, _CHART_ENTRIES)
    values: list[int | None] = []
    known = next((d.balance_after - d.added + d.used for d in ledger if d.balance_after is not None), None)
    for day in ledger:
        known = day.balance_after if day.balance_after is not None else known
        values.append(known)
    if all(v is None for v in values):
        values = [balance] * len(values)
    note = f"Counted over the newest {_CHART_ENTRIES:,} ledger entries." if capped else None
    title = f"Credits: the balance at the end of each day, last {_CHART_DAYS} days"
    return line("credits-chart", title, days, "balance", values, "credits", note)


@router.get("/billing", response_class=HTMLResponse)
async def billing_page(
    request: Request, viewer: ViewerDep, conn: ConnDep, services: ServicesDep
) -> HTMLResponse:
    page = _page_number(request)
    balance = await service.get_balance(conn, viewer.organization_id)
    chart = await _credits_chart(conn, viewer.organization_id, services.clock.now(), balance.balance)
    entries: Sequence[Transaction] = []
    total = 0
    if page is not None:
        params = PageParams(page=page, limit=PAGE_SIZE)
        entries, total = await service.list_transactions(conn, viewer.organization_id, params)
    return render(
        request,
        "billing/index.html",
        viewer,
        status_code=200 if page is not None else 400,
        balance=balance,
        page_error=None if page is not None else f"Page must be a whole number from 1 to {_LAST_PAGE:,}.",
        entries=entries,
        page=page or 1,
        pages=total_pages(total, PAGE_SIZE),
        total=total,
        chart=chart,
    )
