"""Log reading rules: a page of the organization's records, and where a live tail starts."""

from __future__ import annotations

from collections.abc import AsyncIterator

from threadline.kit.db import Conn, Database
from threadline.kit.pagination import CursorParams, decode_cursor
from threadline.telemetry.repository import LogFilters, LogRepository, position_before
from threadline.telemetry.schemas import LogRecordOut
from threadline.telemetry.tail import LogTails


async def list_logs(
    conn: Conn, organization_id: str, filters: LogFilters, params: CursorParams
) -> tuple[list[LogRecordOut], str | None]:
    return await LogRepository(conn, organization_id).list_page(filters, params)


def follow_logs(
    tails: LogTails, db: Database, organization_id: str, filters: LogFilters, resume: str | None
) -> AsyncIterator[bytes]:
    """A live tail's frames. It starts after ``resume`` (a frame's cursor), else just before ``since``,
    else with the records committed from now on. A malformed ``resume`` fails here, before the stream."""
    after_id = decode_cursor(resume) if resume else None
    if after_id is None and filters.since is not None:
        after_id = position_before(filters.since)
    return tails.follow(db, organization_id, filters, after_id)
