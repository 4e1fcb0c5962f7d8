"""Telemetry: log records (logs and product events), partitioned by day of receipt on PostgreSQL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 09:02:11.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import threadline.kit.db

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "log_records",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("received_at", threadline.kit.db.UtcDateTime(timezone=True), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("level", sa.String(length=8), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("timestamp", threadline.kit.db.UtcDateTime(timezone=True), nullable=False),
        sa.Column("attributes", _JSON, nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=True),
        sa.Column("span_id", sa.String(length=16), nullable=True),
        sa.Column("name", sa.String(length=256), nullable=True),
        sa.Column("properties", _JSON, nullable=True),
        sa.Column("distinct_id", sa.String(length=256), nullable=True),
        sa.CheckConstraint("kind IN ('log', 'event')", name=op.f("ck_log_records_kind")),
        sa.CheckConstraint(
            "level IN ('trace', 'debug', 'info', 'warn', 'error', 'fatal')", name=op.f("ck_log_records_level")
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_log_records_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_log_records_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", "received_at", name=op.f("pk_log_records")),
        sqlite_with_rowid=False,
        postgresql_partition_by="RANGE (received_at)",
    )
    op.create_table(
        "log_sequence",
        sa.Column("id", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("last_id", sa.String(length=40), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_log_sequence")),
    )
    op.execute("INSERT INTO log_sequence (id, last_id) VALUES (1, NULL)")
    if op.get_bind().dialect.name == "postgresql":
        # Rows outside every daily partition (none, while telemetry/housekeeping.py keeps days ahead)
        # land here.
        op.execute("CREATE TABLE log_records_default PARTITION OF log_records DEFAULT")


def downgrade() -> None:
    op.drop_table("log_sequence")
    op.drop_table("log_records")
