"""Hot reads without SQLAlchemy's per-execution work: see ``PlainQuery``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect


class PlainQuery:
    """A fixed statement, compiled once per dialect and run alone through the driver (``Database.read``).

    For the hottest reads (``GET /v1/threads``): SQLAlchemy's per-execution work (the statement's cache
    key, the execution context, a type processor per value: a regular expression per SQLite datetime)
    measured more than the query itself. Rows come back as the driver returns them; read times with
    ``stored_isoformat`` and JSON with ``stored_json``. Parameters are ``bindparam`` names, passed as the
    driver takes them (no bind processing: plain strings and numbers only)."""

    def __init__(self, statement: sa.Select[Any]) -> None:
        self._statement = statement
        # Per dialect: the SQL, its parameters' names in order, and the values the compiler fixed itself
        # (SQLite writes ``LIMIT ? OFFSET ?`` with the offset bound to 0).
        self._compiled: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {}

    def bind(self, dialect: Dialect, parameters: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """The SQL for ``dialect`` and its positional parameters."""
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            statement = self._statement.compile(dialect=dialect)
            names = tuple(statement.positiontup or ())
            compiled = self._compiled[dialect.name] = (str(statement), names, dict(statement.params))
        sql, names, fixed = compiled
        return sql, tuple([parameters[name] if name in parameters else fixed[name] for name in names])
