"""Reading telemetry with a secret key: ``GET /v1/logs`` (pages) and ``GET /v1/logs/stream`` (live tail)."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Header, Query, Request

from threadline.access.principal import StreamSlot, principal_of
from threadline.kit.db import Database
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.kit.sse import EventStreamResponse, resume_cursor
from threadline.search.query import parse
from threadline.telemetry import service
from threadline.telemetry.repository import LogFilters
from threadline.telemetry.schemas import Kind, Level, LogRecordOut, SelectionTime
from threadline.telemetry.tail import LogTails


class LogReadServices(Protocol):
    """What the log reading handlers read from the process's services."""

    db: Database
    log_tails: LogTails


ServicesDep = Annotated[LogReadServices, Depends(get_services)]

router = APIRouter(prefix="/v1/logs", tags=["logs"])

ProjectFilter = Annotated[
    str | None, Query(alias="projectId", pattern=r"^proj_[0-9a-z]{26}$", description="Only this project.")
]
LevelFilter = Annotated[Level | None, Query(description="This level and above (`warn`: warn, error, fatal).")]
KindFilter = Annotated[Kind | None, Query(description="`log` or `event`.")]
SinceFilter = Annotated[SelectionTime | None, Query(description="Received at or after (ISO 8601).")]
UntilFilter = Annotated[SelectionTime | None, Query(description="Received before (ISO 8601).")]
TextFilter = Annotated[
    str | None,
    Query(
        max_length=512,
        description='Text in the message: words, "phrases", OR, -exclusion (case-insensitive containment).',
    ),
]


async def log_filters(
    project_id: ProjectFilter = None,
    level: LevelFilter = None,
    kind: KindFilter = None,
    since: SinceFilter = None,
    until: UntilFilter = None,
    q: TextFilter = None,
) -> LogFilters:
    """The filters both reads take, as query parameters."""
    if since is not None and until is not None and since >= until:
        raise BadRequest("since must be earlier than until.", reason=Reason.VALIDATION_FAILED)
    return LogFilters(
        project_id=project_id,
        level=level,
        kind=kind,
        since=since,
        until=until,
        query=parse(q, literal=True) if q is not None else None,
    )


FiltersDep = Annotated[LogFilters, Depends(log_filters)]


@router.get(
    "",
    operation_id="logs.list",
    response_model=CursorPage[LogRecordOut],
    responses=errors(400, *AUTHENTICATED),
)
async def list_logs(
    request: Request, conn: ConnDep, page: CursorDep, filters: FiltersDep
) -> CursorPage[LogRecordOut]:
    """The organization's logs and events, newest first. With `projectId`, `level`, `kind` or `q`, a page
    examines at most 10,000 records: it may hold fewer than `limit` items (even none) and still carry a
    `nextCursor`; follow it until it is null to see every match."""
    records, next_cursor = await service.list_logs(conn, principal_of(request).organization_id, filters, page)
    return CursorPage(data=records, next_cursor=next_cursor)


@router.get(
    "/stream",
    operation_id="logs.stream",
    response_model=None,
    responses={
        200: {
            "description": "Server-Sent Events: first an `id: <cursor>` frame without data (the starting "
            "position), then one `log_record` frame per record (`id: <cursor>`, `data: {type, cursor, "
            "...record}`), `: ping` after 15 s without a frame; `data: [DONE]` once `until` has passed.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **errors(400, *AUTHENTICATED),
    },
)
async def stream_logs(
    request: Request,
    _slot: StreamSlot,
    services: ServicesDep,
    filters: FiltersDep,
    cursor: Annotated[
        str | None, Query(max_length=200, description="Resume strictly after this frame's cursor.")
    ] = None,
    last_event_id: Annotated[str | None, Header(max_length=200, include_in_schema=False)] = None,
) -> EventStreamResponse:
    """A live tail of the organization's logs and events with the list's filters. Without a cursor it
    starts with the records committed from now on (from `since`, when given)."""
    organization_id = principal_of(request).organization_id
    resume = resume_cursor(cursor, last_event_id)
    frames = service.follow_logs(services.log_tails, services.db, organization_id, filters, resume)
    return EventStreamResponse(frames)
