"""Runs, their streams and their artifacts over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, Header, Query, Request

from threadline.access.principal import StreamSlot, principal_of
from threadline.agent.response_format import format_json
from threadline.agent.tool_entries import check_entries, entries_json
from threadline.billing.prices import Prices
from threadline.keys import stream_tokens
from threadline.kit.clock import Clock
from threadline.kit.db import Conn
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.kit.signals import SignalBus
from threadline.kit.sse import DONE, EventStreamResponse, resume_cursor
from threadline.runs import actions, service
from threadline.runs.feeds import RunFeeds
from threadline.runs.schemas import (
    ApprovalsSubmit,
    ArtifactOut,
    RunCreate,
    RunOut,
    RunStreamTokenOut,
    StreamTokenCreate,
    ThreadStreamTokenOut,
    ToolOutputsSubmit,
)
from threadline.threads.service import get_thread


class RunServices(Protocol):
    """What the run handlers read from the process's services."""

    clock: Clock
    prices: Prices
    run_feeds: RunFeeds
    signals: SignalBus


ServicesDep = Annotated[RunServices, Depends(get_services)]

router = APIRouter(tags=["runs"])

StreamCursor = Annotated[
    str | None,
    Query(
        max_length=200, description="Resume strictly after the event with this cursor (`id:` of its frame)."
    ),
]
LastEventId = Annotated[str | None, Header(max_length=200, include_in_schema=False)]

_STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events. Each frame: `id: <cursor>` and `data: {type, cursor, runId, "
        "threadId, createdAt, ...payload}`; the run's last event is `run_completed {status, usage}`, then "
        "`data: [DONE]`. `: ping` comments every 15 s while quiet.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    **errors(400, 404, *AUTHENTICATED),
}


@router.post(
    "/v1/threads/{threadId}/runs",
    operation_id="runs.create",
    status_code=201,
    response_model=RunOut,
    responses=errors(400, 404, 409, 413, *AUTHENTICATED),
)
async def create_run(
    threadId: str, body: RunCreate, request: Request, conn: ConnDep, services: ServicesDep
) -> RunOut:
    """Queues a run on the thread (`input`, when given, is appended as a user message first). Stream it
    with `GET /runs/{runId}/stream`; a thread runs one run at a time (see `multitaskStrategy`). With
    `agentId`, the agent's fields apply wherever the run gives none (404 for an agent or version the
    organization cannot see)."""
    organization = principal_of(request).organization
    if body.tools is not None:
        await check_entries(conn, organization.id, body.tools)
    run = await service.create_run(
        conn,
        services.signals,
        organization,
        threadId,
        model=body.model,
        instructions=body.instructions,
        input=body.input,
        metadata=body.metadata,
        prices=services.prices,
        strategy=body.multitask_strategy,
        tools=entries_json(body.tools) if body.tools is not None else None,
        action_timeout_seconds=(
            body.action_timeout_seconds if "action_timeout_seconds" in body.model_fields_set else None
        ),
        response_format=format_json(body.response_format),
        agent_id=body.agent_id,
        agent_version=body.agent_version,
        now=services.clock.now(),
    )
    return RunOut.of(run)


@router.get(
    "/v1/threads/{threadId}/runs",
    operation_id="runs.list",
    response_model=CursorPage[RunOut],
    responses=errors(400, 404, *AUTHENTICATED),
)
async def list_runs(threadId: str, request: Request, conn: ConnDep, page: CursorDep) -> CursorPage[RunOut]:
    """The thread's runs, newest first."""
    runs, next_cursor = await service.list_runs(conn, principal_of(request).organization_id, threadId, page)
    return CursorPage(data=[RunOut.of(run) for run in runs], next_cursor=next_cursor)


@router.get(
    "/v1/runs/{runId}", operation_id="runs.get", response_model=RunOut, responses=errors(404, *AUTHENTICATED)
)
async def get_run(runId: str, request: Request, conn: ConnDep) -> RunOut:
    return RunOut.of(await service.get_run(conn, principal_of(request).organization_id, runId))


@router.post(
    "/v1/runs/{runId}/cancel",
    operation_id="runs.cancel",
    response_model=RunOut,
    responses=errors(404, 409, *AUTHENTICATED),
)
async def cancel_run(runId: str, request: Request, conn: ConnDep, services: ServicesDep) -> RunOut:
    """Ends a queued or running run at once: it is `cancelled` in the answer, its stream ends with
    `run_completed` (status `cancelled`) and `[DONE]`. A run that has ended is 409 `RUN_ENDED`."""
    run = await service.cancel_run(
        conn,
        services.signals,
        services.prices,
        principal_of(request).organization_id,
        runId,
        now=services.clock.now(),
    )
    return RunOut.of(run)


@router.post(
    "/v1/runs/{runId}/tool-outputs",
    operation_id="runs.submitToolOutputs",
    response_model=RunOut,
    responses=errors(400, 404, 409, 413, *AUTHENTICATED),
)
async def submit_tool_outputs(
    runId: str, body: ToolOutputsSubmit, request: Request, conn: ConnDep, services: ServicesDep
) -> RunOut:
    """Answers a run waiting in `requires_action` for `submit_tool_outputs`: every pending call in one
    request (else 400 `TOOL_OUTPUTS_INCOMPLETE`, the missing ids in `missingContext`); an id not pending is
    400 `UNKNOWN_TOOL_CALL`; a run not waiting for outputs is 409 `RUN_NOT_WAITING`. Each `output` becomes
    its call's `result` (`tool_call_complete`), and the run goes on."""
    outputs = [(o.tool_call_id, o.output) for o in body.tool_outputs]
    run = await actions.submit_tool_outputs(
        conn,
        services.signals,
        principal_of(request).organization_id,
        runId,
        outputs,
        now=services.clock.now(),
    )
    return RunOut.of(run)


@router.post(
    "/v1/runs/{runId}/approvals",
    operation_id="runs.approve",
    response_model=RunOut,
    responses=errors(400, 404, 409, 413, *AUTHENTICATED),
)
async def approve_tool_calls(
    runId: str, body: ApprovalsSubmit, request: Request, conn: ConnDep, services: ServicesDep
) -> RunOut:
    """Decides the calls a run waits on for `approve_tool_calls`, with the same rules as
    `runs.submitToolOutputs`. An approved call executes; a rejected one completes `isError` with result
    `{"error": "rejected", "reason": …}`; the model goes on either way."""
    decisions = [actions.Decision(d.tool_call_id, d.approve, d.reason) for d in body.decisions]
    run = await actions.approve_tool_calls(
        conn,
        services.signals,
        principal_of(request).organization_id,
        runId,
        decisions,
        now=services.clock.now(),
    )
    return RunOut.of(run)


@router.get(
    "/v1/runs/{runId}/stream", operation_id="runs.stream", response_model=None, responses=_STREAM_RESPONSES
)
async def stream_run(
    runId: str,
    request: Request,
    _slot: StreamSlot,
    conn: ConnDep,
    services: ServicesDep,
    cursor: StreamCursor = None,
    last_event_id: LastEventId = None,
) -> EventStreamResponse:
    """The run's events as they happen; a finished run's are replayed. With `cursor` (or `Last-Event-ID`),
    resumes strictly after that event: nothing lost, nothing repeated. A browser opens it with
    `?token=st_…` from `runs.createStreamToken` instead of a key."""
    organization_id = principal_of(request).organization_id
    position = resume_cursor(cursor, last_event_id)
    run, after = await service.run_to_stream(conn, organization_id, runId, position)
    return EventStreamResponse(services.run_feeds.stream(organization_id, run.id, after))


@router.get(
    "/v1/threads/{threadId}/stream",
    operation_id="threads.stream",
    response_model=None,
    responses=_STREAM_RESPONSES,
)
async def stream_thread(
    threadId: str,
    request: Request,
    _slot: StreamSlot,
    conn: ConnDep,
    services: ServicesDep,
    cursor: StreamCursor = None,
    last_event_id: LastEventId = None,
) -> EventStreamResponse:
    """The events of the thread's active run (the running one, else the oldest queued one); with none
    active, a replay of its latest run; with no run at all, `[DONE]` at once. The stream follows one run
    and ends with it; open it again for the next. A `cursor` resumes the run it came from. A browser opens
    it with `?token=st_…` from `threads.createStreamToken` instead of a key."""
    organization_id = principal_of(request).organization_id
    position = resume_cursor(cursor, last_event_id)
    run, after = await service.run_to_follow(conn, organization_id, threadId, position)
    if run is None:
        return EventStreamResponse(_done())
    return EventStreamResponse(services.run_feeds.stream(organization_id, run.id, after))


async def _done() -> AsyncIterator[bytes]:
    yield DONE


# How a stream token behaves, in both operations' descriptions.
_STREAM_CREDENTIAL_RULES = (
    " The token (shown once) opens only this stream, as `?token=st_…` on its URL (a browser's `EventSource`"
    " cannot send headers), until `expiresAt`; a stream opened by then runs to its `[DONE]`. It acts as"
    " the key that made it: that key's revocation refuses it, its requests count against that key's rate"
    " limits. Pages from origins outside `origins` are refused (403 `ORIGIN_NOT_ALLOWED`)."
)


@router.post(
    "/v1/runs/{runId}/stream-tokens",
    operation_id="runs.createStreamToken",
    status_code=201,
    response_model=RunStreamTokenOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
    description="A short-lived token with which a browser reads the run's stream without a secret key."
    + _STREAM_CREDENTIAL_RULES,
)
async def create_run_stream_token(
    runId: str,
    request: Request,
    conn: ConnDep,
    services: ServicesDep,
    body: StreamTokenCreate | None = None,
) -> RunStreamTokenOut:
    run = await service.get_run(conn, principal_of(request).organization_id, runId)
    token, expires_at = await _mint(request, conn, services.clock, body, run_id=run.id)
    return RunStreamTokenOut(token=token, expires_at=expires_at, run_id=run.id)


@router.post(
    "/v1/threads/{threadId}/stream-tokens",
    operation_id="threads.createStreamToken",
    status_code=201,
    response_model=ThreadStreamTokenOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
    description="A short-lived token with which a browser reads the thread's stream (which follows the "
    "thread's runs) without a secret key." + _STREAM_CREDENTIAL_RULES,
)
async def create_thread_stream_token(
    threadId: str,
    request: Request,
    conn: ConnDep,
    services: ServicesDep,
    body: StreamTokenCreate | None = None,
) -> ThreadStreamTokenOut:
    thread = await get_thread(conn, principal_of(request).organization_id, threadId)
    token, expires_at = await _mint(request, conn, services.clock, body, thread_id=thread.id)
    return ThreadStreamTokenOut(token=token, expires_at=expires_at, thread_id=thread.id)


async def _mint(
    request: Request, conn: Conn, clock: Clock, body: StreamTokenCreate | None, **stream: str
) -> tuple[str, datetime]:
    """A token for the stream named (``run_id`` or ``thread_id``, found in the caller's organization),
    recorded as minted by the calling key."""
    principal = principal_of(request)
    body = body or StreamTokenCreate()
    return await stream_tokens.mint(
        conn,
        clock.now(),
        principal.organization,
        principal.key.id,
        ttl_seconds=body.ttl_seconds,
        origins=body.origins,
        **stream,
    )


@router.get(
    "/v1/runs/{runId}/artifacts",
    operation_id="artifacts.list",
    response_model=CursorPage[ArtifactOut],
    responses=errors(400, 404, *AUTHENTICATED),
)
async def list_artifacts(
    runId: str, request: Request, conn: ConnDep, page: CursorDep
) -> CursorPage[ArtifactOut]:
    """The run's artifacts, oldest first."""
    found, next_cursor = await service.list_artifacts(
        conn, principal_of(request).organization_id, runId, page
    )
    return CursorPage(data=[ArtifactOut.of(a) for a in found], next_cursor=next_cursor)


@router.get(
    "/v1/artifacts/{artifactId}",
    operation_id="artifacts.get",
    response_model=ArtifactOut,
    responses=errors(404, *AUTHENTICATED),
)
async def get_artifact(artifactId: str, request: Request, conn: ConnDep) -> ArtifactOut:
    return ArtifactOut.of(await service.get_artifact(conn, principal_of(request).organization_id, artifactId))
