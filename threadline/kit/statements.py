"""Statements whose spelling differs between the SQL dialects, as builders chosen once by the composition
root (``runtime.open_services``) and handed to the code that needs them, so that no domain asks which
dialect it runs on; or as SQL constructs that spell themselves per dialect when compiled
(``JsonTextEquals``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
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


class JsonTextEquals(sa.sql.expression.ColumnElement[bool]):
    """``column[key] = value`` for a JSON object of strings (the ``metadata`` map), for any key.

    SQLAlchemy's ``column[key]`` on SQLite pastes the key into a JSON path (``'$."key"'``) unescaped: a
    key holding ``"`` made the path invalid (a 500 for ``?metadata[env","x]=prod``), and SQLite's paths
    cannot name a key holding ``"``, ``\\`` or any character its JSON text escapes at all. Such keys are
    compared through ``json_each``, which reads keys decoded; the others keep the path, which is faster.
    PostgreSQL binds the key as a parameter (``->>``) whatever it holds."""

    # Not cached: the statement's spelling depends on the key, which a cache key of this class would not
    # hold (a statement compiled for one key would serve another).
    inherit_cache = False
    # A Boolean would be spelled ``(...) = 1`` in SQLite's WHERE.
    type = sa.types.NullType()  # type: ignore[assignment]

    def __init__(self, column: sa.ColumnElement[object], key: str, value: str) -> None:
        self.column = column
        self.json_key = key
        self.json_value = value


_PLAIN_KEY = re.compile(r"[\x20-\x7e]+")


@compiles(JsonTextEquals)
def _json_text_equals(element: JsonTextEquals, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.column[element.json_key].as_string() == element.json_value, **kw)


@compiles(JsonTextEquals, "sqlite")
def _sqlite_json_text_equals(element: JsonTextEquals, compiler: SQLCompiler, **kw: Any) -> str:
    key = element.json_key
    if _PLAIN_KEY.fullmatch(key) and '"' not in key and "\\" not in key:
        return _json_text_equals(element, compiler, **kw)
    entries = sa.func.json_each(element.column).table_valued("key", "value", "type").alias("entry")
    found = sa.exists().where(
        entries.c.key == element.json_key, entries.c.type == "text", entries.c.value == element.json_value
    )
    return compiler.process(found, **kw)
