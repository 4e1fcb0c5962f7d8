"""Log reading rules: a page of the organization's records, and where a live tail starts."""

from __future__ import annotations

from collections.abc import AsyncIterator

from threadline.kit.db import Conn, Database
from threadline.kit.errors import NotFound
from threadline.kit.pagination import CursorParams, decode_cursor, encode_cursor
from threadline.telemetry.repository import LogFilters, LogRepository, position_before
from threadline.telemetry.schemas import LogRecordOut
from threadline.telemetry.tail import LogTails, RecordFrame, json_frame, start_position


async def list_logs(
    conn: Conn, organization_id: str, filters: LogFilters, params: CursorParams
) -> tuple[list[LogRecordOut], str | None]:
    return await LogRepository(conn, organization_id).list_page(filters, params)


async def get_log(conn: Conn, organization_id: str, record_id: str) -> LogRecordOut:
    record = await LogRepository(conn, organization_id).get(record_id)
    if record is None:
        raise NotFound(f"Log record {record_id} was not found.")
    return record


def follow_logs(
    tails: LogTails,
    db: Database,
    organization_id: str,
    filters: LogFilters,
    resume: str | None,
    record_frame: RecordFrame = json_frame,
) -> AsyncIterator[bytes]:
    """A live tail's frames. It starts after ``resume`` (a frame's cursor), else just before ``since``,
    else with the records committed from now on. A malformed ``resume`` fails here, before the stream."""
    after_id = decode_cursor(resume) if resume else None
    if after_id is None and filters.since is not None:
        after_id = position_before(filters.since)
    return tails.follow(db, organization_id, filters, after_id, record_frame)


async def tail_position(conn: Conn, organization_id: str) -> str:
    """The cursor a tail opened now would start from: a page shows the records up to it, and its live
    view resumes after it, so nothing committed between the page and the tail is missed or repeated."""
    return encode_cursor(await start_position(conn, organization_id))
