"""The ledger: every entry and the balance it leaves, written together in the caller's transaction.

An entry first moves the organization's balance with one atomic statement (an upsert that adds and returns
the new value). On PostgreSQL that statement row-locks the account until the transaction ends, so entries
of one organization queue there and each reads the balance its predecessor committed; on SQLite every
write transaction holds the database's write lock. Either way no update is lost and ``balance_after`` is
exact, however many runs end at once. Entries are numbered per organization in the same statement
(``seq``) and listed in that order. Lock order: callers that hold a thread or run lock take the account
last (a run's end charges it after its events, status and thread's active run are written).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa

from threadline.billing.tables import billing_accounts, billing_transactions
from threadline.kit.db import Conn, UtcDateTime
from threadline.kit.ids import new_id
from threadline.kit.pagination import PageParams, fetch_numbered_page
from threadline.kit.timebuckets import TimeBuckets

TransactionType = Literal["credit", "debit"]

# The same text is valid on both dialects (SQLite >= 3.35 and PostgreSQL: ON CONFLICT ... RETURNING).
_MOVE = (
    sa.text(
        "INSERT INTO billing_accounts (organization_id, balance, entries, updated_at) "
        "VALUES (:organization_id, :amount, 1, :now) "
        "ON CONFLICT (organization_id) DO UPDATE "
        "SET balance = billing_accounts.balance + excluded.balance, "
        "entries = billing_accounts.entries + 1, updated_at = excluded.updated_at "
        "RETURNING balance, entries"
    )
    .bindparams(sa.bindparam("now", type_=UtcDateTime()))
    .columns(balance=sa.BigInteger(), entries=sa.BigInteger())
)


@dataclass(frozen=True, slots=True)
class Transaction:
    id: str
    organization_id: str
    type: TransactionType
    amount: int
    balance_after: int
    description: str
    run_id: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Balance:
    balance: int
    updated_at: datetime | None


class LedgerRepository:
    """The ledger of one organization."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def post(
        self,
        type_: TransactionType,
        amount: int,
        description: str,
        *,
        run_id: str | None = None,
        now: datetime,
    ) -> Transaction:
        """Appends one entry; ``amount`` is signed (credits positive, debits zero or negative)."""
        if (type_ == "credit") != (amount > 0) and not (type_ == "debit" and amount == 0):
            raise ValueError(f"a {type_} of {amount} credits")
        moved = (
            await self._conn.execute(
                _MOVE, {"organization_id": self._organization_id, "amount": amount, "now": now}
            )
        ).one()
        entry = Transaction(
            id=new_id("txn"),
            organization_id=self._organization_id,
            type=type_,
            amount=amount,
            balance_after=int(moved.balance),
            description=description,
            run_id=run_id,
            created_at=now,
        )
        await self._conn.execute(
            billing_transactions.insert().values(
                id=entry.id,
                organization_id=self._organization_id,
                seq=int(moved.entries),
                type=type_,
                amount=amount,
                balance_after=entry.balance_after,
                description=description,
                run_id=run_id,
                created_at=now,
            )
        )
        return entry

    async def balance(self) -> Balance:
        row = (
            await self._conn.execute(
                sa.select(billing_accounts.c.balance, billing_accounts.c.updated_at).where(
                    billing_accounts.c.organization_id == self._organization_id
                )
            )
        ).first()
        return Balance(0, None) if row is None else Balance(int(row.balance), row.updated_at)

    async def page(self, params: PageParams) -> tuple[Sequence[Transaction], int]:
        """Newest first (in the order entries were applied to the balance), with the total the page is a
        window of."""
        query = (
            sa.select(billing_transactions)
            .where(billing_transactions.c.organization_id == self._organization_id)
            .order_by(billing_transactions.c.seq.desc())
        )
        rows, total = await fetch_numbered_page(self._conn, query, params)
        return [_from_row(row._mapping) for row in rows], total


@dataclass(frozen=True, slots=True)
class Day:
    """One bucket of the ledger's chart: credits added and used in it, and the balance after its last
    entry (None: no entry in it)."""

    added: int
    used: int
    balance_after: int | None


async def ledger_by_bucket(
    conn: Conn, organization_id: str, buckets: TimeBuckets, cap: int
) -> tuple[list[Day], bool]:
    """The ledger per time bucket, over its newest ``cap`` entries at most (``seq`` above the account's
    entry count less ``cap``: a range of the (organization, seq) index), then the balance after each
    bucket's last entry (a lookup per bucket on that index). The flag: older entries were not counted."""
    t = billing_transactions.c
    entries = (
        await conn.execute(
            sa.select(billing_accounts.c.entries).where(billing_accounts.c.organization_id == organization_id)
        )
    ).scalar_one_or_none()
    if not entries:
        return [Day(0, 0, None) for _ in range(buckets.count)], False
    newest = (
        sa.select(t.id, t.seq, t.amount)
        .where(t.organization_id == organization_id, t.seq > entries - cap, *buckets.range_of(t.id, "txn"))
        .subquery()
    )
    bucket = buckets.index_of(newest.c.id, "txn").label("bucket")
    credit = sa.case((newest.c.amount > 0, newest.c.amount), else_=0)
    query = sa.select(
        bucket,
        sa.func.sum(credit).label("added"),
        sa.func.sum(newest.c.amount - credit).label("used"),
        sa.func.max(newest.c.seq).label("last"),
    ).group_by(bucket)
    rows = {int(row["bucket"]): row for row in (await conn.execute(query)).mappings()}
    last = [int(row["last"]) for row in rows.values()]
    balances: dict[int, int] = {}
    if last:
        after = sa.select(t.seq, t.balance_after).where(t.organization_id == organization_id, t.seq.in_(last))
        balances = {int(row.seq): int(row.balance_after) for row in await conn.execute(after)}
    days = [
        Day(int(row["added"]), -int(row["used"]), balances.get(int(row["last"])))
        if (row := rows.get(i)) is not None
        else Day(0, 0, None)
        for i in range(buckets.count)
    ]
    return days, entries > cap


def _from_row(row: sa.RowMapping) -> Transaction:
    return Transaction(
        id=row["id"],
        organization_id=row["organization_id"],
        type=row["type"],
        amount=int(row["amount"]),
        balance_after=int(row["balance_after"]),
        description=row["description"],
        run_id=row["run_id"],
        created_at=row["created_at"],
    )
