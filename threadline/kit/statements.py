"""Statements whose spelling differs between the SQL dialects, as builders chosen once by the composition
root (``runtime.open_services``) and handed to the code that needs them, so that no domain asks which
dialect it runs on."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

# ``INSERT ... ON CONFLICT (columns) DO NOTHING`` into a table, given the columns of the unique index whose
# conflict is ignored.
InsertOrIgnore = Callable[[sa.Table, Sequence[str]], Insert]


def _postgresql_insert_or_ignore(table: sa.Table, unique: Sequence[str]) -> Insert:
    return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(unique))


def _sqlite_insert_or_ignore(table: sa.Table, unique: Sequence[str]) -> Insert:
    return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(unique))


def insert_or_ignore(dialect_name: str) -> InsertOrIgnore:
    """The builder for ``dialect_name`` (``Database.dialect_name``)."""
    builders: dict[str, InsertOrIgnore] = {
        "postgresql": _postgresql_insert_or_ignore,
        "sqlite": _sqlite_insert_or_ignore,
    }
    return builders[dialect_name]
