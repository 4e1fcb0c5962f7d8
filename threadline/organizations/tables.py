import sqlalchemy as sa

from threadline.kit.db import UtcDateTime
from threadline.storage.metadata import id_column, metadata

organizations = sa.Table(
    "organizations",
    metadata,
    id_column(),
    sa.Column("name", sa.String(200), nullable=False),
    # NULL means the configured default; set by an operator (`threadline orgs set-limit`).
    sa.Column("rate_limit_per_minute", sa.Integer, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
)
