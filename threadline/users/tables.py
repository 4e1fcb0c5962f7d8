import sqlalchemy as sa

from threadline.kit.db import UtcDateTime
from threadline.storage.metadata import metadata

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(40),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("email", sa.String(320), nullable=False, unique=True),
    # argon2id PHC string; the password itself is never stored.
    sa.Column("password_hash", sa.String(200), nullable=False),
    sa.Column("role", sa.String(20), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)
