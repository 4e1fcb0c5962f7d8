import sqlalchemy as sa

from threadline.kit.db import UtcDateTime
from threadline.storage.metadata import metadata

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(40),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index(None, "organization_id", "id"),
)
