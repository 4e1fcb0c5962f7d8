import sqlalchemy as sa

from threadline.kit.db import UtcDateTime
from threadline.storage.metadata import id_column, metadata, organization_column

projects = sa.Table(
    "projects",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index(None, "organization_id", "id"),
)
