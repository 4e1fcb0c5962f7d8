import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import UtcDateTime

users = sa.Table(
    "users",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("email", sa.String(320), nullable=False, unique=True),
    # argon2id PHC string; the password itself is never stored.
    sa.Column("password_hash", sa.String(200), nullable=False),
    sa.Column("role", sa.String(20), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)
