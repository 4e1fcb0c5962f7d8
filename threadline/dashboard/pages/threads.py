"""``/threads``: the organization's threads newest first (the API's list, with its metadata filter) or a
thread search (the API's); ``/threads/{id}``: its messages as a timeline, its runs, "Start run" and the
active run's live view (``runs/_view.html``)."""

from __future__ import annotations

from typing import Annotated, Any, Protocol
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from threadline.agents import service as agents
from threadline.billing.prices import Prices
from threadline.dashboard.pages.runs import view_context
from threadline.dashboard.sessions import Viewer
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.clock import Clock
from threadline.kit.db import Conn, Database, stored_isoformat, stored_json
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.errors import ApiError, BadRequest, NotFound
from threadline.kit.pagination import CursorParams, PageParams, cursor_params
from threadline.kit.signals import SignalBus
from threadline.messages.service import list_messages
from threadline.organizations.repository import OrganizationRepository
from threadline.runs import service as runs
from threadline.runs.schemas import RunCreate
from threadline.search import service as search
from threadline.search.backend import SearchBackend
from threadline.search.query import MAX_QUERY_CHARS
from threadline.threads import service
from threadline.threads.fast_list import list_page, metadata_filter
from threadline.threads.schemas import ThreadCreate
from threadline.threads.service import ThreadInserts

router = APIRouter()

PAGE_SIZE = 25
MESSAGES_PER_PAGE = 50
RUNS_PER_PAGE = 10
# The agents the run form offers: the newest hundred (the API's page limit).
AGENT_CHOICES = CursorParams(100, None)
_CURSOR = Annotated[str | None, Query(max_length=200)]


class ThreadPageServices(Protocol):
    """What the thread pages read from the process's services."""

    clock: Clock
    db: Database
    prices: Prices
    search: SearchBackend
    signals: SignalBus
    thread_inserts: ThreadInserts


ServicesDep = Annotated[ThreadPageServices, Depends(get_services)]


def _problems(invalid: ValidationError) -> str:
    return "; ".join(str(problem["msg"]) for problem in invalid.errors())


def _metadata_query(metadata: dict[str, str]) -> list[tuple[str, str]]:
    return [(f"metadata[{key}]", value) for key, value in metadata.items()]


@router.get("/threads")
async def threads_page(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    cursor: _CURSOR = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    key: Annotated[str, Query(max_length=200)] = "",
    value: Annotated[str, Query(max_length=2000)] = "",
) -> Response:
    """The form's "Metadata key"/"Metadata value" pair becomes the API's ``metadata[key]=value`` (a
    redirect: the URL then says what the list shows, and filters add up)."""
    try:
        metadata = metadata_filter(request)
    except BadRequest as error:
        return _list(request, viewer, q=q, metadata={}, error=error.message, status_code=400)
    if key.strip():
        metadata[key.strip()] = value
        query = ([("q", q)] if q else []) + _metadata_query(metadata)
        return RedirectResponse(f"/threads?{urlencode(query)}", status_code=303)
    if q.strip():
        try:
            found = await search.search_threads(
                services.db, services.search, viewer.organization_id, q, PageParams(page, PAGE_SIZE)
            )
        except BadRequest as error:
            return _list(request, viewer, q=q, metadata=metadata, error=error.message, status_code=400)
        return _list(request, viewer, q=q, metadata=metadata, results=found)
    try:
        params = await cursor_params(limit=PAGE_SIZE, cursor=cursor)
        rows, next_cursor = await list_page(services.db, viewer.organization_id, params, metadata)
    except BadRequest as error:
        return _list(request, viewer, q=q, metadata=metadata, error=error.message, status_code=400)
    threads = [
        {
            "id": row.id,
            "title": row.title,
            "metadata": stored_json(row.metadata),
            "active_run_id": row.active_run_id,
            "message_count": row.message_count,
            "updated_at": stored_isoformat(row.updated_at),
        }
        for row in rows
    ]
    next_url = None
    if next_cursor:
        next_url = "/threads?" + urlencode([("cursor", next_cursor), *_metadata_query(metadata)])
    return _list(
        request, viewer, q=q, metadata=metadata, threads=threads, next_url=next_url, first=not cursor
    )


def _list(
    request: Request,
    viewer: Viewer,
    *,
    q: str,
    metadata: dict[str, str],
    status_code: int = 200,
    **context: Any,
) -> Response:
    # Each filter's removal link: the same list without it.
    removals = {
        key: "/threads?" + urlencode(_metadata_query({k: v for k, v in metadata.items() if k != key}))
        for key in metadata
    }
    context.setdefault("threads", [])
    return render(
        request,
        "threads/list.html",
        viewer,
        status_code=status_code,
        q=q,
        metadata=metadata,
        removals=removals,
        **context,
    )


@router.post("/threads")
async def create_thread(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    title: Annotated[str, Form(max_length=10_000)] = "",
) -> Response:
    try:
        body = ThreadCreate(title=title.strip() or None)
    except ValidationError as invalid:
        return _list(request, viewer, q="", metadata={}, error=_problems(invalid), status_code=400)
    thread = await service.create_thread_committed(
        services.thread_inserts,
        viewer.organization_id,
        title=body.title,
        metadata={},
        now=services.clock.now(),
    )
    return RedirectResponse(f"/threads/{quote(thread.id, safe='')}", status_code=303)


async def _thread_page(
    request: Request,
    viewer: Viewer,
    conn: Conn,
    thread_id: str,
    *,
    cursor: str | None = None,
    runs_cursor: str | None = None,
    message: str = "",
    agent: str = "",
    error: str | None = None,
    status_code: int = 200,
) -> Response:
    organization_id = viewer.organization_id
    thread = await service.get_thread(conn, organization_id, thread_id)
    try:
        message_params = await cursor_params(limit=MESSAGES_PER_PAGE, cursor=cursor)
        run_params = await cursor_params(limit=RUNS_PER_PAGE, cursor=runs_cursor)
    except BadRequest:
        message_params = CursorParams(MESSAGES_PER_PAGE, None)
        run_params = CursorParams(RUNS_PER_PAGE, None)
    messages, next_messages = await list_messages(conn, organization_id, thread.id, message_params)
    thread_runs, next_runs = await runs.list_runs(conn, organization_id, thread.id, run_params)
    active = None
    if thread.active_run_id is not None:
        run = await runs.get_run(conn, organization_id, thread.active_run_id)
        active = await view_context(conn, organization_id, run)
    choices, _ = await agents.list_agents(conn, organization_id, AGENT_CHOICES)
    base = f"/threads/{quote(thread.id, safe='')}"
    return render(
        request,
        "threads/thread.html",
        viewer,
        status_code=status_code,
        thread=thread,
        messages=messages,
        later_messages=f"{base}?{urlencode({'cursor': next_messages})}" if next_messages else None,
        first_messages=base if cursor else None,
        runs=thread_runs,
        older_runs=f"{base}?{urlencode({'runs_cursor': next_runs})}" if next_runs else None,
        active=active,
        message=message,
        error=error,
        agents=choices,
        agent=agent,
    )


@router.get("/threads/{thread_id}")
async def thread_page(
    thread_id: str,
    request: Request,
    viewer: ViewerDep,
    conn: ConnDep,
    cursor: _CURSOR = None,
    runs_cursor: _CURSOR = None,
) -> Response:
    return await _thread_page(request, viewer, conn, thread_id, cursor=cursor, runs_cursor=runs_cursor)


async def start_run_on(
    conn: Conn,
    services: ThreadPageServices,
    organization_id: str,
    thread_id: str,
    message: str,
    agent_id: str,
) -> None:
    """``POST /v1/threads/{id}/runs`` with ``input`` (and ``agentId`` when one is chosen): the message and
    the run in one transaction. Raises what the API would answer (ValidationError: a 400)."""
    if not message.strip():
        raise BadRequest("Write the message the run answers.")
    body = RunCreate(input=message, agentId=agent_id or None)
    organization = await OrganizationRepository(conn).get(organization_id)
    if organization is None:
        raise NotFound("The organization was not found.")
    await runs.create_run(
        conn,
        services.signals,
        organization,
        thread_id,
        model=body.model,
        instructions=body.instructions,
        input=body.input,
        metadata=body.metadata,
        prices=services.prices,
        strategy=body.multitask_strategy,
        agent_id=body.agent_id,
        now=services.clock.now(),
    )


@router.post("/threads/{thread_id}/runs")
async def start_run(
    thread_id: str,
    request: Request,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    message: Annotated[str, Form(max_length=300_000)] = "",
    agent: Annotated[str, Form(max_length=40)] = "",
) -> Response:
    try:
        await start_run_on(conn, services, viewer.organization_id, thread_id, message, agent)
    except ValidationError as invalid:
        return await _thread_page(
            request,
            viewer,
            conn,
            thread_id,
            message=message,
            agent=agent,
            error=_problems(invalid),
            status_code=400,
        )
    except ApiError as refused:
        if refused.status_code == 404 and not agent:
            raise
        return await _thread_page(
            request,
            viewer,
            conn,
            thread_id,
            message=message,
            agent=agent,
            error=refused.message,
            status_code=refused.status_code,
        )
    return RedirectResponse(f"/threads/{quote(thread_id, safe='')}#run-view-title", status_code=303)
