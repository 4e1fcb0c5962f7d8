import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import JsonType, UtcDateTime

# ``secret_sealed``: the ``whsec_`` secret sealed by ``kit.encryption`` (bound to the row's id); it is shown
# once, when the endpoint is made, and opened only to sign.
webhook_endpoints = sa.Table(
    "webhook_endpoints",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("events", JsonType, nullable=False),
    sa.Column("description", sa.String(500), nullable=True),
    sa.Column("secret_sealed", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Index(None, "organization_id", "id"),
)

# One event, once per organization, whatever number of endpoints receive it: ``body`` is the exact JSON
# every attempt sends (the signature covers it, so it is never re-encoded).
webhook_events = sa.Table(
    "webhook_events",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("type", sa.String(40), nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

# One row per attempt. ``pending``: due at ``next_attempt_at`` (``claimed_until``: a dispatcher is sending it
# until then; past it, another may). ``failed`` with ``next_attempt_at``: a pending row for the next attempt
# exists, due then; without, it was the last attempt.
webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    id_column(),
    organization_column(),
    sa.Column(
        "webhook_id", sa.String(40), sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "event_id", sa.String(40), sa.ForeignKey("webhook_events.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("event_type", sa.String(40), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("response_status", sa.Integer, nullable=True),
    sa.Column("error", sa.String(500), nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("next_attempt_at", UtcDateTime, nullable=True),
    sa.Column("claimed_until", UtcDateTime, nullable=True),
    sa.CheckConstraint("status IN ('pending', 'succeeded', 'failed')", name="status"),
    sa.Index(None, "webhook_id", "id"),
    sa.Index(None, "status", "next_attempt_at"),
)
