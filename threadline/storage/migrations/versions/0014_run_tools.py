"""Runs that wait for their caller: the tools a run offers, the ``requires_action`` status, what it waits
for and until when, and the agent's conversation kept while it waits (no task holds it meanwhile).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 22:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import threadline.kit.db

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD = "status IN ('queued', 'running', 'completed', 'failed', 'cancelled')"
_NEW = "status IN ('queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled')"


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tools", threadline.kit.db.JsonType, nullable=True))
        batch_op.add_column(
            sa.Column("action_timeout_seconds", sa.Integer(), nullable=False, server_default="600")
        )
        batch_op.add_column(sa.Column("required_action", threadline.kit.db.JsonType, nullable=True))
        batch_op.add_column(sa.Column("action_expires_at", threadline.kit.db.UtcDateTime(), nullable=True))
        batch_op.add_column(sa.Column("agent_state", sa.Text(), nullable=True))
        batch_op.drop_constraint(op.f("ck_runs_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_runs_status"), _NEW)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_runs_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_runs_status"), _OLD)
        for column in (
            "agent_state",
            "action_expires_at",
            "required_action",
            "action_timeout_seconds",
            "tools",
        ):
            batch_op.drop_column(column)
