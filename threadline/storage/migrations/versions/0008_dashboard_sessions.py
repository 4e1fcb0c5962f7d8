"""Dashboard sessions: the hash of each signed-in browser's session id, its user and CSRF token.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 15:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import threadline.kit.db

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.Column("last_seen_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_dashboard_sessions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_dashboard_sessions_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_dashboard_sessions")),
    )
    op.create_index("ix_dashboard_sessions_user_id", "dashboard_sessions", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_dashboard_sessions_user_id", table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
