from __future__ import annotations

from typing import Literal

from pydantic import Field

from threadline.billing.ledger import Balance, Transaction
from threadline.kit.pagination import LedgerPagination
from threadline.kit.schemas import ResponseModel, Timestamp


class TransactionOut(ResponseModel):
    id: str
    type: Literal["credit", "debit"]
    amount: int = Field(description="Integer credits, signed: credits positive, debits zero or negative.")
    balance_after: int = Field(description="The organization's balance right after this entry.")
    description: str
    run_id: str | None = Field(description="The run a debit charges; null for credits.")
    created_at: Timestamp

    @classmethod
    def of(cls, entry: Transaction) -> TransactionOut:
        return cls(
            id=entry.id,
            type=entry.type,
            amount=entry.amount,
            balance_after=entry.balance_after,
            description=entry.description,
            run_id=entry.run_id,
            created_at=entry.created_at,
        )


class TransactionPage(ResponseModel):
    data: list[TransactionOut]
    pagination: LedgerPagination


class BalanceOut(ResponseModel):
    balance: int = Field(description="Integer credits: the sum of every ledger entry.")
    updated_at: Timestamp | None = Field(description="When the last entry was written; null if none.")

    @classmethod
    def of(cls, balance: Balance) -> BalanceOut:
        return cls(balance=balance.balance, updated_at=balance.updated_at)
