import sqlalchemy as sa

from threadline.kit.columns import metadata, organization_column
from threadline.kit.db import UtcDateTime

dashboard_sessions = sa.Table(
    "dashboard_sessions",
    metadata,
    # SHA-256 of the cookie's 256-bit random id: a leaked table opens no session.
    sa.Column("id_hash", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(40), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    organization_column(),
    # The synchronizer token every state-changing request of the session must carry (OWASP CSRF).
    sa.Column("csrf_token", sa.String(64), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("last_seen_at", UtcDateTime, nullable=False),
    sa.Index("ix_dashboard_sessions_user_id", "user_id"),
)
