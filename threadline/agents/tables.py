import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import JsonType, UtcDateTime

# The agent itself: its id, its latest version, and when it was made and last changed. What a version
# holds lives in ``agent_versions``, one row per version, never changed once written, so a run pinned to
# version 3 runs what version 3 was.
agents = sa.Table(
    "agents",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Index(None, "organization_id", "id"),
)

# ``tools`` and ``response_format`` keep the API's objects as given (camelCase JSON, defaults filled in);
# null: the run's default (the built-in tools, text answers). Deleting the agent deletes its versions;
# runs name the agent and version without a foreign key, so they keep their record. A version's own id
# (``agv_``, made after the previous version's while the agent's row is locked) orders the versions for
# the cursor pages every list uses.
agent_versions = sa.Table(
    "agent_versions",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("agent_id", sa.String(40), sa.ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("model", sa.String(200), nullable=True),
    sa.Column("instructions", sa.Text, nullable=True),
    sa.Column("tools", JsonType, nullable=True),
    sa.Column("response_format", JsonType, nullable=True),
    sa.Column("action_timeout_seconds", sa.Integer, nullable=True),
    sa.Column("metadata", JsonType, key="meta", nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.UniqueConstraint("agent_id", "version"),
    sa.Index(None, "agent_id", "id"),
)
