"""Stream tokens: the hash of each short-lived token that opens one run's or thread's stream.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import threadline.kit.db

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stream_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("thread_id", sa.String(length=40), nullable=True),
        sa.Column(
            "origins",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.Column("expires_at", threadline.kit.db.UtcDateTime(), nullable=False),
        sa.CheckConstraint(
            "(run_id IS NULL) <> (thread_id IS NULL)", name=op.f("ck_stream_tokens_one_stream")
        ),
        sa.ForeignKeyConstraint(
            ["key_id"], ["api_keys.id"], name=op.f("fk_stream_tokens_key_id_api_keys"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_stream_tokens_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_stream_tokens")),
    )
    op.create_index("ix_stream_tokens_key_id", "stream_tokens", ["key_id"], unique=False)
    op.create_index(
        "ix_stream_tokens_organization_id_expires_at",
        "stream_tokens",
        ["organization_id", "expires_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_stream_tokens_organization_id_expires_at", table_name="stream_tokens")
    op.drop_index("ix_stream_tokens_key_id", table_name="stream_tokens")
    op.drop_table("stream_tokens")
