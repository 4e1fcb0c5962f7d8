import sqlalchemy as sa

from threadline.kit.db import UtcDateTime
from threadline.storage.metadata import metadata

organizations = sa.Table(
    "organizations",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    # NULL means the configured default; set by an operator (`threadline orgs set-limit`).
    sa.Column("rate_limit_per_minute", sa.Integer, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
)
