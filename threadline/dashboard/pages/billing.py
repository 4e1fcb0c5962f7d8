"""``/billing``: the balance and the ledger, page by page, as ``GET /v1/billing/*`` read them."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from threadline.billing import service
from threadline.billing.ledger import Transaction
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.deps import ConnDep
from threadline.kit.pagination import PageParams, total_pages

router = APIRouter()

PAGE_SIZE = 25
_LAST_PAGE = 1_000_000  # as the API's page parameter allows


def _page_number(request: Request) -> int | None:
    raw = request.query_params.get("page", "").strip() or "1"
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= _LAST_PAGE else None


@router.get("/billing", response_class=HTMLResponse)
async def billing_page(request: Request, viewer: ViewerDep, conn: ConnDep) -> HTMLResponse:
    page = _page_number(request)
    balance = await service.get_balance(conn, viewer.organization_id)
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
    )
