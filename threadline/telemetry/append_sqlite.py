"""SQLite's log appends, chosen by the composition root (``THREADLINE_LOG_STORE``): ``SqliteAppender``
appends in the server, ``SqliteStoreAppender`` hands the groups without watched records to the store
process (``telemetry.log_store``) and appends the others in the server, in the same transaction as what
the watch persists.

Rows are prepared as the driver's parameter lists, column by column, outside the write lock; the id and
``received_at`` slots are filled at commit, and the ``timestamp`` slot of a record sent without a time."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.engine import Connection

from threadline.kit.db import stored_isoformat
from threadline.telemetry import log_store
from threadline.telemetry.log_store import ID_SLOT, TIMESTAMP_SLOT, AppendError, StoreProcess, sqlite_time
from threadline.telemetry.records import Row
from threadline.telemetry.tables import log_records
from threadline.telemetry.writer import committed_record

# The parameter lists are written out column by column in ``_parameters`` and inserted by a statement of
# ``log_store``'s (which imports no SQLAlchemy); this keeps both in step with the table.
_COLUMNS = tuple(column.name for column in log_records.c)
if _COLUMNS != log_store.COLUMNS:  # pragma: no cover - a schema change must update both
    raise RuntimeError(f"log_records columns changed: {_COLUMNS}; update log_store.COLUMNS")


def _parameters(rows: list[Row]) -> list[Any]:
    """Each row as the driver's parameter list (``log_store.COLUMNS``)."""
    formatted: dict[datetime, str] = {}  # records sent with a time often share it
    prepared = []
    for row in rows:
        moment = row["timestamp"]
        text = None
        if moment is not None:
            text = formatted.get(moment)
            if text is None:
                text = formatted[moment] = sqlite_time(moment)
        attributes, properties = row["attributes"], row["properties"]
        prepared.append(
            [
                row["organization_id"],
                None,  # id
                None,  # received_at
                row["project_id"],
                row["kind"],
                row["level"],
                row["message"],
                text,
                # pydantic-core's encoder: several times faster than json.dumps; any JSON reads back the same.
                None if attributes is None else to_json(attributes).decode(),
                row["trace_id"],
                row["span_id"],
                row["name"],
                None if properties is None else to_json(properties).decode(),
                row["distinct_id"],
            ]
        )
    return prepared


def _as_sqlalchemy(exc: AppendError) -> sa.exc.StatementError:
    """As SQLAlchemy raises a driver's error (IntegrityError, DataError, OperationalError, ...), so the
    group commit and the intake treat a failed append the same whichever process ran it."""
    return sa.exc.DBAPIError.instance(exc.statement, None, exc.error, sqlite3.Error)


class SqliteAppender:
    """Every group appended in the server (``THREADLINE_LOG_STORE=inline``, or a database in memory)."""

    store: StoreProcess | None = None
    prepare = staticmethod(_parameters)

    @staticmethod
    def append(connection: Connection, rows: list[Any]) -> None:
        cursor = connection.connection.cursor()  # the driver's own cursor
        try:
            log_store.append(cursor, rows)  # type: ignore[arg-type]
        except AppendError as exc:
            raise _as_sqlalchemy(exc) from exc
        finally:
            cursor.close()

    @staticmethod
    def committed(row: Row, prepared: Any) -> dict[str, Any]:
        return committed_record(row, prepared[ID_SLOT], stored_isoformat(prepared[TIMESTAMP_SLOT]))


class SqliteStoreAppender(SqliteAppender):
    """Groups without watched records appended by the store process (``THREADLINE_LOG_STORE=process``, the
    default), which answers a refused append as SQLAlchemy would have raised it."""

    def __init__(self, database: Path) -> None:
        self.store = StoreProcess(database, failure=_as_sqlalchemy)
