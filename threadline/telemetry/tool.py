"""The agent's ``query_logs`` tool: the organization's recent logs, read as ``GET /v1/logs`` reads them."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from threadline.agent.tools import Arguments, ToolContext, ToolResult, tool
from threadline.kit.clock import isoformat
from threadline.kit.errors import BadRequest
from threadline.kit.ids import ids_now
from threadline.kit.pagination import CursorParams
from threadline.search.query import parse
from threadline.telemetry import service as logs
from threadline.telemetry.repository import LogFilters
from threadline.telemetry.schemas import Level


class QueryLogsArgs(Arguments):
    level: Level | None = Field(None, description="This level and above.")
    contains: str | None = Field(None, max_length=512, description="Text the message contains.")
    since_minutes: int = Field(60, alias="sinceMinutes", ge=1, le=60 * 24 * 90)
    limit: int = Field(20, ge=1, le=50)


async def _query_logs(context: ToolContext, args: QueryLogsArgs) -> ToolResult:
    try:
        query = parse(args.contains, literal=True) if args.contains else None
    except BadRequest as error:
        return ToolResult(error.message, is_error=True)
    filters = LogFilters(
        level=args.level, since=ids_now() - timedelta(minutes=args.since_minutes), query=query
    )
    async with context.db.transaction(write=False) as conn:
        records, _ = await logs.list_logs(
            conn, context.organization_id, filters, CursorParams(limit=args.limit, after_id=None)
        )
    found = [
        {
            "id": r.id,
            "level": r.level,
            "message": r.message,
            "timestamp": isoformat(r.timestamp),
            "projectId": r.project_id,
            "attributes": r.attributes,
        }
        for r in records
    ]
    return ToolResult({"records": found})


QUERY_LOGS = tool(
    "query_logs",
    "The organization's recent logs, newest first; optionally at or above a level, containing text.",
    QueryLogsArgs,
    _query_logs,
)
