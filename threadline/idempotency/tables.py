import sqlalchemy as sa

from threadline.kit.columns import metadata, organization_column
from threadline.kit.db import UtcDateTime

# One row per (organization, key), kept 24 h. ``status`` null: the first request is still in flight (its
# process holds it; ``created_at`` tells a dead process's row from a live one). ``fingerprint``: SHA-256
# of the method, path, query and body, so a reuse with another request is told apart from a retry.
idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    organization_column(),
    sa.Column("key", sa.String(255), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("status", sa.Integer, nullable=True),
    sa.Column("content_type", sa.String(200), nullable=True),
    sa.Column("body", sa.LargeBinary, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.PrimaryKeyConstraint("organization_id", "key"),
    sa.Index(None, "created_at"),
)
