import sqlalchemy as sa

from threadline.kit.columns import metadata, organization_column, search_key_column
from threadline.kit.db import JsonType, UtcDateTime

messages = sa.Table(
    "messages",
    metadata,
    search_key_column(),
    sa.Column("id", sa.String(40), nullable=False, unique=True),
    organization_column(),
    sa.Column("thread_id", sa.String(40), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
    sa.Column("run_id", sa.String(40), nullable=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("metadata", JsonType, key="meta", nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.CheckConstraint("role IN ('user', 'assistant', 'system', 'tool')", name="role"),
    sa.Index(None, "thread_id", "id"),
)
