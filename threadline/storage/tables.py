"""Every domain's tables, imported in one place so migrations and tests see the whole schema."""

from threadline.agents.tables import agent_versions, agents
from threadline.automations.tables import automation_firings, automations
from threadline.billing.tables import billing_accounts, billing_transactions
from threadline.dashboard.tables import dashboard_sessions
from threadline.idempotency.tables import idempotency_keys
from threadline.keys.tables import api_keys, stream_tokens
from threadline.kit.columns import metadata
from threadline.mcp_servers.tables import mcp_servers
from threadline.messages.tables import messages
from threadline.organizations.tables import organizations
from threadline.projects.tables import projects
from threadline.runs.tables import artifacts, run_counts, run_events, run_outbox, runs
from threadline.telemetry.tables import log_counts, log_records, log_sequence
from threadline.threads.tables import threads
from threadline.users.tables import users
from threadline.webhooks.tables import webhook_deliveries, webhook_endpoints, webhook_events

# Full-text objects the migrations create per dialect, outside the declared tables: SQLite FTS5 virtual
# tables (and their shadow tables), PostgreSQL's generated search_vector columns and message postings
# (search/postings.py).
SEARCH_TABLE_PREFIXES = ("threads_fts", "messages_fts", "search_")
SEARCH_COLUMNS = ("search_vector",)
# PostgreSQL's partitions of log_records (log_records_p20261121, log_records_default): created and dropped
# by the migrations and by telemetry/housekeeping.py, never declared one by one.
PARTITION_PREFIX = "log_records_"


def is_declared(name: str | None, type_: str) -> bool:
    """For Alembic's ``include_object``: leave search objects and partitions to the code that owns them."""
    if name is None:
        return True
    if type_ == "table":
        return not name.startswith((*SEARCH_TABLE_PREFIXES, PARTITION_PREFIX))
    if type_ in ("column", "index"):
        return not (name in SEARCH_COLUMNS or name.startswith("ix_search_"))
    return True


__all__ = [
    "agent_versions",
    "agents",
    "api_keys",
    "artifacts",
    "automation_firings",
    "automations",
    "billing_accounts",
    "billing_transactions",
    "dashboard_sessions",
    "idempotency_keys",
    "is_declared",
    "log_counts",
    "log_records",
    "log_sequence",
    "mcp_servers",
    "messages",
    "metadata",
    "organizations",
    "projects",
    "run_counts",
    "run_events",
    "run_outbox",
    "runs",
    "stream_tokens",
    "threads",
    "users",
    "webhook_deliveries",
    "webhook_endpoints",
    "webhook_events",
]
