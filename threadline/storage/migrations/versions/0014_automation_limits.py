"""Organizations: operator-set caps on automations held and on runs queued before a firing starts no more
(NULL: THREADLINE_DEFAULT_AUTOMATION_LIMIT, THREADLINE_DEFAULT_QUEUED_RUN_LIMIT).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("organizations") as batch:
        batch.add_column(sa.Column("automation_limit", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("queued_run_limit", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organizations") as batch:
        batch.drop_column("queued_run_limit")
        batch.drop_column("automation_limit")
