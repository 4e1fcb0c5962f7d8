import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import JsonType, UtcDateTime

RUN_STATUSES = ("queued", "running", "requires_action", "completed", "failed", "cancelled")

runs = sa.Table(
    "runs",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("thread_id", sa.String(40), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("instructions", sa.Text, nullable=True),
    sa.Column("automation_id", sa.String(40), nullable=True),
    sa.Column("metadata", JsonType, key="meta", nullable=False),
    sa.Column("error_code", sa.String(64), nullable=True),
    sa.Column("error_message", sa.Text, nullable=True),
    sa.Column("input_tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("output_tokens", sa.Integer, nullable=False, server_default="0"),
    # The sequence number of the run's last event: the next event is event_count + 1.
    sa.Column("event_count", sa.Integer, nullable=False, server_default="0"),
    # The executor holding the run and until when; a lapsed lease means its process died.
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("lease_expires_at", UtcDateTime, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("started_at", UtcDateTime, nullable=True),
    sa.Column("ended_at", UtcDateTime, nullable=True),
    # The tool entries the run was given (NULL: the built-in tools) and how long it may wait for its caller.
    sa.Column("tools", JsonType, nullable=True),
    sa.Column("action_timeout_seconds", sa.Integer, nullable=False, server_default="600"),
    # While ``requires_action``: what it waits for (the API's ``requiredAction``), until when, and the
    # agent's conversation and pending calls (agent.suspension), so any executor continues it later.
    sa.Column("required_action", JsonType, nullable=True),
    sa.Column("action_expires_at", UtcDateTime, nullable=True),
    sa.Column("agent_state", sa.Text, nullable=True),
    # The agent the run was made from and its version (agents.resolve), null without one. No foreign key:
    # a deleted agent's runs keep naming what they ran.
    sa.Column("agent_id", sa.String(40), nullable=True),
    sa.Column("agent_version", sa.Integer, nullable=True),
    # The ``responseFormat`` the answer must follow (agent.response_format); NULL: text.
    sa.Column("response_format", JsonType, nullable=True),
    sa.CheckConstraint(
        "status IN ('queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled')",
        name="status",
    ),
    sa.Index(None, "thread_id", "id"),
    sa.Index(None, "status", "id"),
    sa.Index(None, "organization_id", "id"),
    # An automation's runs, newest first (its page and GET /v1/automations/{id}/runs): without it, an
    # automation that fires rarely makes every page scan its organization's runs.
    sa.Index(None, "automation_id", "id"),
)

# Persisted before they are published: a stream replays from here, so nothing a client missed is lost.
run_events = sa.Table(
    "run_events",
    metadata,
    sa.Column("run_id", sa.String(40), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    organization_column(),
    sa.Column("type", sa.String(32), nullable=False),
    # The frame's JSON exactly as streamed (cursor included): a replay sends it without re-encoding.
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sqlite_with_rowid=False,
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("run_id", sa.String(40), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("thread_id", sa.String(40), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.String(256), nullable=False),
    sa.Column("mime_type", sa.String(128), nullable=False),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index(None, "run_id", "id"),
)

# What a run's change tells the domains above it (webhooks), written in the same transaction as the change
# so a process that dies right after its commit loses nothing: they read and delete rows at their pace.
# ``data`` is the run as the API shows it then (RunOut's JSON), so a row needs nothing else to be sent.
run_outbox = sa.Table(
    "run_outbox",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("run_id", sa.String(40), nullable=False),
    sa.Column("type", sa.String(40), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

# Runs per hour of creation (hours since the epoch, UTC) and status, with the tokens (input and output) of
# those that ended: what the overview's charts read instead of the runs. Kept by triggers on ``runs``
# (migration 0020) in the transaction of every insert, status change and deletion, cascades included, so
# no code path that writes a run can forget them; a running run's usage, recorded with each model response,
# touches no count (that would lock its hour's row in every one of those commits).
run_counts = sa.Table(
    "run_counts",
    metadata,
    organization_column(),
    sa.Column("hour", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("runs", sa.BigInteger, nullable=False),
    sa.Column("tokens", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("organization_id", "hour", "status"),
    sqlite_with_rowid=False,
)
