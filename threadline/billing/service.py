"""Billing reads for the API. Entries are written by a run's end (``runs.service``) and by an operator's
grant (``threadline billing grant``), each in its own transaction through ``LedgerRepository.post``."""

from __future__ import annotations

from collections.abc import Sequence

from threadline.billing.ledger import Balance, LedgerRepository, Transaction
from threadline.kit.db import Conn
from threadline.kit.pagination import PageParams


async def list_transactions(
    conn: Conn, organization_id: str, params: PageParams
) -> tuple[Sequence[Transaction], int]:
    return await LedgerRepository(conn, organization_id).page(params)


async def get_balance(conn: Conn, organization_id: str) -> Balance:
    return await LedgerRepository(conn, organization_id).balance()
