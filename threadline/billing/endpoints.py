"""The ledger and the balance over HTTP (read-only: credits are granted by an operator)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from threadline.access.principal import principal_of
from threadline.billing import service
from threadline.billing.schemas import BalanceOut, TransactionOut, TransactionPage
from threadline.kit.deps import ConnDep, PageDep
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import LedgerPagination, total_pages

router = APIRouter(prefix="/v1/billing", tags=["billing"])


@router.get(
    "/transactions",
    operation_id="billing.transactions",
    response_model=TransactionPage,
    responses=errors(400, *AUTHENTICATED),
)
async def list_transactions(request: Request, conn: ConnDep, page: PageDep) -> TransactionPage:
    """The organization's ledger, newest first, page by page (`pagination.total` counts every entry)."""
    entries, total = await service.list_transactions(conn, principal_of(request).organization_id, page)
    return TransactionPage(
        data=[TransactionOut.of(entry) for entry in entries],
        pagination=LedgerPagination(
            page=page.page, limit=page.limit, total_pages=total_pages(total, page.limit), total=total
        ),
    )


@router.get(
    "/balance", operation_id="billing.balance", response_model=BalanceOut, responses=errors(*AUTHENTICATED)
)
async def get_balance(request: Request, conn: ConnDep) -> BalanceOut:
    """The sum of the ledger: credits granted minus runs charged."""
    return BalanceOut.of(await service.get_balance(conn, principal_of(request).organization_id))
