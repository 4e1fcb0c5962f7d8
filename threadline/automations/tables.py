import sqlalchemy as sa

from threadline.kit.db import JsonType, UtcDateTime
from threadline.storage.metadata import id_column, metadata, organization_column

AUTOMATION_TRIGGERS = ("schedule", "log")

# ``trigger`` and ``action`` keep the objects of the API as given (camelCase JSON); the columns the
# scheduler and the log matcher select on are kept beside them.
automations = sa.Table(
    "automations",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("trigger_type", sa.String(16), nullable=False),
    sa.Column("trigger", JsonType, nullable=False),
    sa.Column("action", JsonType, nullable=False),
    # The next time a schedule is due (UTC); null for log triggers and disabled automations.
    sa.Column("next_run_at", UtcDateTime, nullable=True),
    sa.Column("last_triggered_at", UtcDateTime, nullable=True),
    # Why the last firing created no run ({"code", "message"}), cleared by the next one that does.
    sa.Column("last_error", JsonType, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.CheckConstraint("trigger_type IN ('schedule', 'log')", name="trigger_type"),
    sa.Index(None, "organization_id", "id"),
    sa.Index(None, "next_run_at"),
    sa.Index(None, "trigger_type", "enabled"),
)
