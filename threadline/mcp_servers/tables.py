import sqlalchemy as sa

from threadline.kit.columns import id_column, metadata, organization_column
from threadline.kit.db import JsonType, UtcDateTime

# ``headers_sealed``: the header values, one JSON object sealed by ``kit.encryption`` (bound to the row's
# id); null when the server takes none. ``header_names`` keeps the names readable, since they are shown.
mcp_servers = sa.Table(
    "mcp_servers",
    metadata,
    id_column(),
    organization_column(),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("transport", sa.String(32), nullable=False),
    sa.Column("header_names", JsonType, nullable=False),
    sa.Column("headers_sealed", sa.Text, nullable=True),
    sa.Column("timeout_seconds", sa.Float, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.CheckConstraint("transport IN ('streamable_http', 'sse')", name="transport"),
    sa.Index(None, "organization_id", "id"),
)
