"""MCP servers: the servers an organization registers, their header values sealed (kit/encryption.py).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import threadline.kit.db

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_servers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("transport", sa.String(length=32), nullable=False),
        sa.Column(
            "header_names",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("headers_sealed", sa.Text(), nullable=True),
        sa.Column("timeout_seconds", sa.Float(), nullable=False),
        sa.Column("created_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.Column("updated_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.CheckConstraint("transport IN ('streamable_http', 'sse')", name=op.f("ck_mcp_servers_transport")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_mcp_servers_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_servers")),
    )
    op.create_index(
        "ix_mcp_servers_organization_id_id", "mcp_servers", ["organization_id", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_mcp_servers_organization_id_id", table_name="mcp_servers")
    op.drop_table("mcp_servers")
