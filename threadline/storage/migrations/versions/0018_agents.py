"""Agents: saved run configurations, each version kept as it was, and the agent a run was made from.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 01:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import threadline.kit.db

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.Column("updated_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_agents_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
    )
    op.create_index("ix_agents_organization_id_id", "agents", ["organization_id", "id"], unique=False)
    op.create_table(
        "agent_versions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("agent_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("instructions", sa.Text(), nullable=True),
        sa.Column("tools", threadline.kit.db.JsonType, nullable=True),
        sa.Column("response_format", threadline.kit.db.JsonType, nullable=True),
        sa.Column("action_timeout_seconds", sa.Integer(), nullable=True),
        sa.Column("metadata", threadline.kit.db.JsonType, nullable=False),
        sa.Column("created_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_agent_versions_agent_id_agents"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_agent_versions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_versions")),
        sa.UniqueConstraint("agent_id", "version", name=op.f("uq_agent_versions_agent_id_version")),
    )
    op.create_index("ix_agent_versions_agent_id_id", "agent_versions", ["agent_id", "id"], unique=False)
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("agent_id", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("agent_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("agent_version")
        batch_op.drop_column("agent_id")
    op.drop_index("ix_agent_versions_agent_id_id", table_name="agent_versions")
    op.drop_table("agent_versions")
    op.drop_index("ix_agents_organization_id_id", table_name="agents")
    op.drop_table("agents")
