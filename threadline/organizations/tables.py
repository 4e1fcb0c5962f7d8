import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata
from threadline.kit.db import JsonType, UtcDateTime

organizations = sa.Table(
    "organizations",
    metadata,
    id_column(),
    sa.Column("name", sa.String(200), nullable=False),
    # NULL means the configured default; set by an operator (`threadline orgs set-limit`).
    sa.Column("rate_limit_per_minute", sa.Integer, nullable=True),
    # Runs of the organization executing at once; NULL means the configured default (same operator command).
    sa.Column("run_concurrency", sa.Integer, nullable=True),
    # Open streams at once per process; NULL means the configured default (`set-limit --streams`).
    sa.Column("stream_limit", sa.Integer, nullable=True),
    # Automations the organization may hold, and runs it may have queued for an automation's firing to
    # start another; NULL means the configured default (`set-limit --automations`, `--queued-runs`).
    sa.Column("automation_limit", sa.Integer, nullable=True),
    sa.Column("queued_run_limit", sa.Integer, nullable=True),
    # Settings (PATCH /v1/settings). NULL means the documented default, so defaults can evolve.
    sa.Column("default_model", sa.String(200), nullable=True),
    sa.Column("instructions", sa.Text, nullable=True),
    sa.Column("log_retention_days", sa.Integer, nullable=True),
    sa.Column("allowed_origins", JsonType, nullable=True),
    sa.Column("billing_enforced", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
)
