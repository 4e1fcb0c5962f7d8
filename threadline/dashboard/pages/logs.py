"""``/logs``: the organization's log records, newest first, with the filters of ``GET /v1/logs`` kept in the
URL, a record's detail, and a live tail (``/logs/stream``) over the same tail as ``GET /v1/logs/stream``,
sending HTML fragments instead of JSON.

The filters are validated by the API's own parameter types and its ``log_filters`` rules, so a filter the
API refuses is refused here with the same message, shown at its field instead of as a 400 envelope.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Protocol
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, ValidationError

from threadline.dashboard.charts import Chart, stacked
from threadline.dashboard.streams import DashboardStreamSlot
from threadline.dashboard.web import ViewerDep, render, render_fragment
from threadline.kit.clock import Clock, isoformat
from threadline.kit.db import Conn, Database
from threadline.kit.deps import get_services
from threadline.kit.errors import ApiError, NotFound
from threadline.kit.pagination import CursorParams, decode_cursor
from threadline.kit.sse import EventStreamResponse, resume_cursor
from threadline.kit.timebuckets import TimeBuckets
from threadline.projects import service as projects
from threadline.projects.repository import Project
from threadline.telemetry import service
from threadline.telemetry.endpoints import (
    KindFilter,
    LevelFilter,
    ProjectFilter,
    SinceFilter,
    TextFilter,
    UntilFilter,
    log_filters,
)
from threadline.telemetry.repository import SCAN_WINDOW, LogFilters
from threadline.telemetry.schemas import LEVELS, LogRecordOut
from threadline.telemetry.tail import LogTails
from threadline.telemetry.volume import floor_hour, volume

router = APIRouter()

PAGE_SIZE = 50
# Records the volume chart counts at most (the newest of its window) when it counts records rather than the
# hourly counts (a text query, buckets under an hour, a window's partial first or last hour): half the
# list's scan window, so the chart costs the page less than its list (measured at 1,000,000 records:
# 10,000 added 40 ms to the page's p50 on a loaded machine, 5,000 about half that). Beyond it the chart
# says how far back it counted.
CHART_WINDOW = SCAN_WINDOW // 2
# The projects a filter offers and records are named by: one page of them (ids stand in beyond it).
_PROJECTS_SHOWN = 100
_FIELDS = ("projectId", "level", "kind", "since", "until", "q")
_RECORD_ID = re.compile(r"^log_[0-9a-z]{26}$")
# Everything but "\n" that ends a line for an SSE parser or for str.splitlines: inside a fragment they can
# only come from a record's own text, where a character reference renders the same.
_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class LogServices(Protocol):
    """What the logs pages read from the process's services."""

    db: Database
    clock: Clock
    log_tails: LogTails


ServicesDep = Annotated[LogServices, Depends(get_services)]


class _FilterParams(BaseModel):
    """The query parameters of ``GET /v1/logs``, with the API's own types and constraints."""

    model_config = ConfigDict(extra="ignore")

    project_id: ProjectFilter = None
    level: LevelFilter = None
    kind: KindFilter = None
    since: SinceFilter = None
    until: UntilFilter = None
    q: TextFilter = None


class Selection:
    """The filters as typed (kept in the URL and the form) and, when valid, as the API reads them."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.values = {name: raw.get(name, "").strip() for name in _FIELDS}
        self.values["q"] = raw.get("q", "")
        self.errors: dict[str, str] = {}
        self.filters: LogFilters | None = None

    async def validate(self) -> LogFilters | None:
        given = {name: value for name, value in self.values.items() if value}
        try:
            params = _FilterParams.model_validate(given)
        except ValidationError as invalid:
            for error in invalid.errors():
                field = str(error["loc"][0]) if error["loc"] else "q"
                self.errors.setdefault(field, _message(field, error["msg"]))
            return None
        try:
            self.filters = await log_filters(**params.model_dump())
        except ApiError as refused:
            self.errors["until" if "since" in refused.message else "q"] = refused.message
        return self.filters

    def query(self, **extra: str) -> str:
        """The URL query of these filters (empty ones left out), plus ``extra``."""
        pairs = {name: value for name, value in self.values.items() if value}
        return urlencode({**pairs, **{k: v for k, v in extra.items() if v}})


def _message(field: str, detail: str) -> str:
    names = {"projectId": "Project", "level": "Level", "kind": "Kind", "since": "Since", "until": "Until"}
    if field == "projectId":
        return "Choose one of the organization's projects."
    if field in ("since", "until"):
        return f"{names[field]}: enter a date and time such as 2026-01-31T09:30 (UTC)."
    return f"{names.get(field, 'Search')}: {detail[:1].lower()}{detail[1:]}."


async def _project_names(conn: Conn, organization_id: str) -> dict[str, str]:
    found, _ = await projects.list_projects(conn, organization_id, CursorParams(_PROJECTS_SHOWN, None))
    return {project.id: project.name for project in sorted(found, key=_by_name)}


def _by_name(project: Project) -> str:
    return project.name.lower()


def attributes_json(record: LogRecordOut) -> str:
    return json.dumps(record.attributes, indent=2, ensure_ascii=False, sort_keys=True)


def properties_json(record: LogRecordOut) -> str:
    return json.dumps(record.properties, indent=2, ensure_ascii=False, sort_keys=True)


@router.get("/logs", response_class=HTMLResponse)
async def logs_page(request: Request, viewer: ViewerDep, services: ServicesDep) -> Response:
    selection = Selection(request.query_params)
    raw_cursor = request.query_params.get("cursor", "")
    filters = await selection.validate()
    cursor_error = None
    after_id = None
    if raw_cursor:
        try:
            after_id = decode_cursor(raw_cursor)
        except ApiError as refused:
            cursor_error = refused.message
    records: list[LogRecordOut] = []
    next_cursor = position = volume = None
    now = services.clock.now()
    async with services.db.transaction(write=False) as conn:
        names = await _project_names(conn, viewer.organization_id)
        if filters is not None and cursor_error is None:
            position = await service.tail_position(conn, viewer.organization_id)
            records, next_cursor = await service.list_logs(
                conn, viewer.organization_id, filters, CursorParams(PAGE_SIZE, after_id)
            )
            if not raw_cursor:
                volume = await _volume_chart(conn, viewer.organization_id, filters, now)
    failed = bool(selection.errors) or cursor_error is not None
    return render(
        request,
        "logs/index.html",
        viewer,
        status_code=400 if failed else 200,
        selection=selection,
        cursor_error=cursor_error,
        records=records,
        next_cursor=next_cursor,
        first_page=not raw_cursor,
        position=position,
        projects=names,
        levels=LEVELS,
        volume=volume,
        presets=[
            (label, isoformat(now - delta)[:16])
            for label, delta in (
                ("Last 15 minutes", timedelta(minutes=15)),
                ("Last hour", timedelta(hours=1)),
                ("Last 24 hours", timedelta(days=1)),
                ("Last 7 days", timedelta(days=7)),
            )
        ],
        attributes_json=attributes_json,
        properties_json=properties_json,
    )


async def _volume_chart(conn: Conn, organization_id: str, filters: LogFilters, now: datetime) -> Chart:
    """The records the filters select over their window (the last 24 hours, from the start of their first
    hour, when it has no start; until now when it has no end), per bucket and level: the same selection as
    the list, counted, not listed (``telemetry.volume``: exact from the hourly counts when it can be)."""
    start = filters.since or floor_hour(now - timedelta(days=1))
    buckets = TimeBuckets.covering(start, filters.until or now)
    counted = await volume(conn, organization_id, filters, buckets, CHART_WINDOW)
    note = None
    if counted.partial is not None:
        oldest, until = counted.partial
        note = (
            f"Counted over the newest {CHART_WINDOW:,} matching records before {until:%b %d %H:%M} UTC, "
            f"back to {oldest:%b %d %H:%M:%S} UTC: earlier ones there are not counted. "
            + ("Narrow the window for all of them." if not counted.exact_hours else "")
        ).strip()
    window = "the last 24 hours" if filters.since is None else "the filters' window"
    title = f"Log records by level, {window}"
    return stacked("volume-chart", title, buckets, LEVELS, counted.counts, "records", note)


@router.get("/logs/stream")
async def logs_stream(
    request: Request,
    _slot: DashboardStreamSlot,
    viewer: ViewerDep,
    services: ServicesDep,
    after: str | None = None,
    last_event_id: Annotated[str | None, Header(max_length=200)] = None,
) -> Response:
    """The live tail with the page's filters. ``after`` is where the page's list ended (its first
    connection); a reconnecting EventSource's ``Last-Event-ID`` wins over it, so nothing arrives twice."""
    selection = Selection(request.query_params)
    filters = await selection.validate()
    if filters is None:
        return PlainTextResponse(" ".join(selection.errors.values()), status_code=400)
    async with services.db.transaction(write=False) as conn:
        names = await _project_names(conn, viewer.organization_id)
    try:
        frames = service.follow_logs(
            services.log_tails,
            services.db,
            viewer.organization_id,
            filters,
            resume_cursor(last_event_id, after),
            RecordHtml(tuple(sorted(names.items()))),
        )
    except ApiError as refused:
        return PlainTextResponse(refused.message, status_code=400)
    return EventStreamResponse(frames)


@dataclass(frozen=True, slots=True)
class RecordHtml:
    """Writes a record as an SSE ``record`` event: the list item's HTML over as many ``data:`` lines as it
    has (an EventSource joins them with newlines again).

    A value, not a closure: the fragment depends only on the record and the organization's project names,
    so every tab of an organization with the same filters compares equal here and shares one feed (one
    read and one rendering per commit, ``LogTails``), as the API's tails do."""

    projects: tuple[tuple[str, str], ...]

    def __call__(self, cursor: str, record: LogRecordOut) -> bytes:
        html = render_fragment(
            "logs/_record.html",
            record=record,
            projects=dict(self.projects),
            attributes_json=attributes_json,
            properties_json=properties_json,
        )
        html = _LINE_BREAKS.sub(lambda match: f"&#{ord(match.group())};", html)
        data = "".join(f"data: {line}\n" for line in html.strip().split("\n"))
        return f"id: {cursor}\nevent: record\n{data}\n".encode()


@router.get("/logs/{record_id}", response_class=HTMLResponse)
async def log_record(request: Request, record_id: str, viewer: ViewerDep, services: ServicesDep) -> Response:
    if not _RECORD_ID.match(record_id):
        raise NotFound("No such log record.")
    async with services.db.transaction(write=False) as conn:
        record = await service.get_log(conn, viewer.organization_id, record_id)
        names = await _project_names(conn, viewer.organization_id)
    return render(
        request,
        "logs/record.html",
        viewer,
        record=record,
        projects=names,
        attributes_json=attributes_json,
        properties_json=properties_json,
    )
