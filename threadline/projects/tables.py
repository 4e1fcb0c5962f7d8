import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import UtcDateTime

projects = sa.Table(
    "projects",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index(None, "organization_id", "id"),
)
