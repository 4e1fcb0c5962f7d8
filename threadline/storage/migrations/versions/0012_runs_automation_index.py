"""Runs: an index for an automation's runs, newest first (their page walked every run of the organization).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 18:40:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.create_index(batch.f("ix_runs_automation_id_id"), ["automation_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index(batch.f("ix_runs_automation_id_id"))
