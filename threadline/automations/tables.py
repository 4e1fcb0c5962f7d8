import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import JsonType, UtcDateTime

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

# Log-trigger firings owed: written in the same transaction as the log record that matched, deleted in the
# same transaction as the firing that settles them (a run, a cooldown that drops it, or a lastError). So a
# matching record, once acknowledged, is fired even if its process dies right after the commit: another
# process (or this one, restarted) finds the row. One row per automation: while one is owed, later matches
# add nothing (the firing starts the cooldown they would fall into).
automation_firings = sa.Table(
    "automation_firings",
    metadata,
    sa.Column(
        "automation_id",
        sa.String(40),
        sa.ForeignKey("automations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    organization_column(),
    sa.Column("record", JsonType, nullable=False),
    sa.Column("matched_at", UtcDateTime, nullable=False),
)
