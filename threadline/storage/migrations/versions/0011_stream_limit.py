"""Organizations: an operator-set cap on open streams (NULL: THREADLINE_DEFAULT_STREAM_LIMIT).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 15:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("organizations") as batch:
        batch.add_column(sa.Column("stream_limit", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organizations") as batch:
        batch.drop_column("stream_limit")
