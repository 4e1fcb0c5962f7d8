import sqlalchemy as sa

from threadline.kit.columns import metadata, organization_column, search_key_column
from threadline.kit.db import JsonType, UtcDateTime

threads = sa.Table(
    "threads",
    metadata,
    search_key_column(),
    sa.Column("id", sa.String(40), nullable=False, unique=True),
    organization_column(),
    sa.Column("title", sa.String(256), nullable=True),
    sa.Column("metadata", JsonType, key="meta", nullable=False),
    # Title and metadata values, as the search index reads them (kept by the service on every write).
    sa.Column("search_text", sa.Text, nullable=False),
    # The running run, else the oldest queued one, else NULL; kept by runs.service under the thread's lock.
    sa.Column("active_run_id", sa.String(40), nullable=True),
    sa.Column("message_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Index(None, "organization_id", "id"),
)
