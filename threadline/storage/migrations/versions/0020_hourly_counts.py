"""Hourly counts for the dashboard's charts: log records per (organization, hour of receipt, project,
level, kind) and runs per (organization, hour of creation, status) with their tokens, counted from what is
stored (the backfill) and kept from then on where the rows are written: log records by their appenders
(``telemetry.log_store``, ``telemetry.append_postgres``), runs by the triggers made here (every insert,
status change and deletion of a run, cascades included, in the same transaction; a run's tokens once it
has ended).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 01:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Hours since the epoch (UTC) of a stored UtcDateTime, per dialect: SQLite keeps "YYYY-MM-DD HH:MM:SS.ffffff".
_HOUR = {
    "sqlite": "CAST(strftime('%s', {0}) AS INTEGER) / 3600",
    "postgresql": "CAST(floor(extract(epoch FROM {0}) / 3600) AS INTEGER)",
}

# A run's tokens are counted once it has ended: they change only while it runs (every recorded model
# response), and counting them then would lock its hour's row in each of those commits, serializing the
# commits of an organization's concurrent runs on PostgreSQL. Ended, they no longer change.
_TOKENS = "CASE WHEN {0}.status IN ('completed', 'failed', 'cancelled') THEN {0}.input_tokens + {0}.output_tokens ELSE 0 END"
_ADD_RUN = (
    "INSERT INTO run_counts (organization_id, hour, status, runs, tokens) "
    "VALUES (NEW.organization_id, {hour}, NEW.status, 1, " + _TOKENS.format("NEW") + ") "
    "ON CONFLICT (organization_id, hour, status) DO UPDATE "
    "SET runs = run_counts.runs + excluded.runs, tokens = run_counts.tokens + excluded.tokens;"
)
_REMOVE_RUN = (
    "UPDATE run_counts SET runs = runs - 1, tokens = tokens - " + _TOKENS.format("OLD") + " "
    "WHERE organization_id = OLD.organization_id AND hour = {hour} AND status = OLD.status;"
)


def upgrade() -> None:
    op.create_table(
        "log_counts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("level", sa.String(length=8), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_log_counts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_log_counts_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "hour", "project_id", "level", "kind", name=op.f("pk_log_counts")
        ),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "run_counts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_run_counts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "hour", "status", name=op.f("pk_run_counts")),
        sqlite_with_rowid=False,
    )
    dialect = op.get_bind().dialect.name
    received, created = _HOUR[dialect].format("received_at"), _HOUR[dialect].format("created_at")
    op.execute(
        "INSERT INTO log_counts (organization_id, hour, project_id, level, kind, records) "
        f"SELECT organization_id, {received}, project_id, level, kind, count(*) FROM log_records "
        f"GROUP BY organization_id, {received}, project_id, level, kind"
    )
    op.execute(
        "INSERT INTO run_counts (organization_id, hour, status, runs, tokens) "
        f"SELECT organization_id, {created}, status, count(*), sum({_TOKENS.format('runs')}) FROM runs "
        f"GROUP BY organization_id, {created}, status"
    )
    old_hour, new_hour = _HOUR[dialect].format("OLD.created_at"), _HOUR[dialect].format("NEW.created_at")
    add, remove = _ADD_RUN.format(hour=new_hour), _REMOVE_RUN.format(hour=old_hour)
    if dialect == "sqlite":
        op.execute(f"CREATE TRIGGER run_counts_insert AFTER INSERT ON runs BEGIN {add} END")
        op.execute(
            "CREATE TRIGGER run_counts_update AFTER UPDATE OF status ON runs "
            f"WHEN OLD.status <> NEW.status BEGIN {remove} {add} END"
        )
        op.execute(f"CREATE TRIGGER run_counts_delete AFTER DELETE ON runs BEGIN {remove} END")
        return
    # One function for the three events. A status change takes the two counts' row locks in the order of
    # their statuses, whichever way it goes, so two runs changing in opposite directions cannot deadlock.
    op.execute(
        "CREATE FUNCTION run_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF TG_OP = 'INSERT' THEN " + add + " RETURN NULL; END IF; "
        "IF TG_OP = 'DELETE' THEN " + remove + " RETURN NULL; END IF; "
        "IF OLD.status = NEW.status THEN RETURN NULL; END IF; "
        "IF NEW.status < OLD.status THEN " + add + " " + remove + " ELSE " + remove + " " + add + " END IF; "
        "RETURN NULL; END $$"
    )
    op.execute(
        "CREATE TRIGGER run_counts_change AFTER INSERT OR DELETE OR UPDATE OF status "
        "ON runs FOR EACH ROW EXECUTE FUNCTION run_counts_change()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for event in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS run_counts_{event}")
    else:
        op.execute("DROP TRIGGER IF EXISTS run_counts_change ON runs")
        op.execute("DROP FUNCTION IF EXISTS run_counts_change()")
    op.drop_table("run_counts")
    op.drop_table("log_counts")
