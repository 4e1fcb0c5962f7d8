import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import JsonType, UtcDateTime

api_keys = sa.Table(
    "api_keys",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("project_id", sa.String(40), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("type", sa.String(10), nullable=False),
    # SHA-256 of the full key value, hex. The value itself is never stored.
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("last4", sa.String(4), nullable=False),
    sa.Column("rate_limit_per_minute", sa.Integer, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("last_used_at", UtcDateTime, nullable=True),
    sa.Column("revoked_at", UtcDateTime, nullable=True),
    sa.CheckConstraint("type IN ('public', 'secret')", name="type"),
    sa.CheckConstraint("(type = 'public') = (project_id IS NOT NULL)", name="project_scope"),
    sa.Index(None, "organization_id", "id"),
)

# A stream token (keys/stream_tokens.py) opens one run's or one thread's stream until it expires. Only its
# SHA-256 is stored; the key that minted it is named, so the key's revocation and limits apply to it.
stream_tokens = sa.Table(
    "stream_tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    organization_column(),
    sa.Column("key_id", sa.String(40), sa.ForeignKey("api_keys.id", ondelete="CASCADE"), nullable=False),
    sa.Column("run_id", sa.String(40), nullable=True),
    sa.Column("thread_id", sa.String(40), nullable=True),
    sa.Column("origins", JsonType, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("expires_at", UtcDateTime, nullable=False),
    sa.CheckConstraint("(run_id IS NULL) <> (thread_id IS NULL)", name="one_stream"),
    sa.Index(None, "organization_id", "expires_at"),
    sa.Index(None, "key_id"),
)
