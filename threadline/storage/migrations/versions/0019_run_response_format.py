"""A run's ``responseFormat``: NULL for text (the default), else the format as given, camelCase, defaults
filled in (``agent.response_format.format_json``), so the executor passes it to the provider and checks the
answer against it whenever the run executes or resumes.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 01:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import threadline.kit.db

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("response_format", threadline.kit.db.JsonType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("response_format")
