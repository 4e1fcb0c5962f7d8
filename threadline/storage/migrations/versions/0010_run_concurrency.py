"""Per-organization run concurrency: how many of its runs execute at once (NULL: the configured default).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("organizations", sa.Column("run_concurrency", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("run_concurrency")
