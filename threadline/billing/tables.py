import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import UtcDateTime

# One row per organization: its running balance and its number of entries. Every ledger entry moves both
# in the entry's own transaction (``INSERT ... ON CONFLICT DO UPDATE SET balance = balance + :amount,
# entries = entries + 1 RETURNING ...``), so the row's lock is what orders concurrent entries, and each
# entry's ``balance_after`` and ``seq`` are exact.
billing_accounts = sa.Table(
    "billing_accounts",
    metadata,
    sa.Column(
        "organization_id",
        sa.String(40),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("balance", sa.BigInteger, nullable=False),
    sa.Column("entries", sa.BigInteger, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
)

# Append-only: rows are inserted, never updated or deleted (but with their organization). ``run_id`` is
# unique, so a run can never be charged twice; it has no foreign key, so the ledger outlives deleted threads.
billing_transactions = sa.Table(
    "billing_transactions",
    metadata,
    id_column(),
    organization_column(),
    # The entry's place in its organization's ledger (1, 2, ...): the order balances were applied in,
    # which ids (made from each process's clock) only approximate across processes.
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("type", sa.String(8), nullable=False),
    sa.Column("amount", sa.BigInteger, nullable=False),
    sa.Column("balance_after", sa.BigInteger, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("run_id", sa.String(40), nullable=True, unique=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.CheckConstraint("type IN ('credit', 'debit')", name="type"),
    sa.CheckConstraint(
        "(type = 'credit' AND amount > 0) OR (type = 'debit' AND amount <= 0)", name="amount_sign"
    ),
    sa.Index(None, "organization_id", "seq", unique=True),
)
