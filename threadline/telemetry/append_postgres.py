"""PostgreSQL's log appends: every group in the server, in its group's transaction (rows stay the decoded
dicts; the insert takes them as they are)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from threadline.kit.clock import isoformat
from threadline.telemetry.log_store import ADD_COUNTS, next_ids, tally
from threadline.telemetry.records import Row
from threadline.telemetry.tables import log_records, log_sequence
from threadline.telemetry.writer import committed_record

_COUNTED = ("organization_id", "project_id", "level", "kind", "hour", "records")
_ADD_COUNTS = sa.text(ADD_COUNTS.format(*(f":{name}" for name in _COUNTED)))
_LAST_ID = sa.select(log_sequence.c.last_id).where(log_sequence.c.id == 1).with_for_update()


def _unchanged(rows: list[Row]) -> list[Any]:
    return rows


class PostgresAppender:
    store = None
    prepare = staticmethod(_unchanged)

    @staticmethod
    def append(connection: Connection, rows: list[Any]) -> None:
        ids, received_at = next_ids(connection.execute(_LAST_ID).scalar_one_or_none(), len(rows))
        for row, row_id in zip(rows, ids, strict=True):
            row["id"] = row_id
            row["received_at"] = received_at
            if row["timestamp"] is None:  # no time of its own: when it was received
                row["timestamp"] = received_at
        connection.execute(log_records.insert(), rows)
        keys = ((row["organization_id"], row["project_id"], row["level"], row["kind"]) for row in rows)
        counts = [dict(zip(_COUNTED, values, strict=True)) for values in tally(keys, received_at)]
        connection.execute(_ADD_COUNTS, counts)
        connection.execute(log_sequence.update().where(log_sequence.c.id == 1).values(last_id=ids[-1]))

    @staticmethod
    def committed(row: Row, prepared: Any) -> dict[str, Any]:
        return committed_record(row, prepared["id"], isoformat(prepared["timestamp"]))
