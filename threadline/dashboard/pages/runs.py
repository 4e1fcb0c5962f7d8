"""``/runs/{id}``: a run as it happens and, once it has ended, its replay; its live events over SSE as
HTML fragments for htmx; "Cancel run"; an artifact's download.

The page renders the events persisted when it was read and connects from the last of them; the stream
reads the same feed as ``GET /v1/runs/{id}/stream`` (``RunFeeds.follow``) and resumes strictly after the
later of ``?after=`` (the page's, kept current by runs.js) and ``Last-Event-ID`` (the browser's own
reconnection), so no event is shown twice or lost."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Annotated, Any, Literal, Protocol
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Header, Query, Request
from fastapi.responses import RedirectResponse, Response

from threadline.billing.prices import Prices
from threadline.dashboard.pages.run_view import fold, preview
from threadline.dashboard.sessions import Viewer
from threadline.dashboard.streams import DashboardStreamSlot
from threadline.dashboard.web import ViewerDep, render, safe_next
from threadline.kit import sse
from threadline.kit.clock import Clock
from threadline.kit.db import Conn
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.errors import BadRequest, Conflict
from threadline.kit.signals import SignalBus
from threadline.runs import actions, events, service
from threadline.runs.feeds import Marker, RunFeeds
from threadline.runs.repository import Run

router = APIRouter()

# Events per SSE message when a client is far behind: the view fills progressively, a message at a time.
_BATCH = 500
_CURSOR_PARAM = Annotated[str | None, Query(max_length=200)]
_END = b"event: done\ndata: [DONE]\n\n"


class RunPageServices(Protocol):
    """What the run pages read from the process's services."""

    clock: Clock
    prices: Prices
    run_feeds: RunFeeds
    signals: SignalBus


ServicesDep = Annotated[RunPageServices, Depends(get_services)]


async def view_context(conn: Conn, organization_id: str, run: Run) -> dict[str, Any]:
    """What ``runs/_view.html`` needs: the run's persisted events folded into blocks. Whether it is live
    follows from those events (no ``run_completed`` yet), read after the run, so a run that ended
    meanwhile shows its end rather than a stream with nothing to come."""
    stored = await events.EventRepository(conn, organization_id).after(run.id, 0)
    folded = fold([json.loads(event.data) for event in stored])
    usage = {"inputTokens": run.input_tokens, "outputTokens": run.output_tokens}
    status: str = run.status
    if folded.completed is not None:
        status, usage = folded.completed["status"], folded.completed["usage"]
    return {
        "run": run,
        "fold": folded,
        "status": status,
        "usage": usage,
        "live": folded.completed is None and run.is_active,
        "preview": preview,
    }


@router.get("/runs/{run_id}")
async def run_page(run_id: str, request: Request, viewer: ViewerDep, conn: ConnDep) -> Response:
    run = await service.get_run(conn, viewer.organization_id, run_id)
    context = await view_context(conn, viewer.organization_id, run)
    return render(request, "runs/run.html", viewer, link_run=False, **context)


def _later(after: str | None, last_event_id: str | None) -> str | None:
    """The later of two resume positions of the same run (each is checked by ``run_to_stream``)."""
    given = [cursor for cursor in (after, last_event_id) if cursor]
    if len(given) < 2:
        return given[0] if given else None
    parsed = [events.parse_cursor(cursor) for cursor in given]
    return max(zip(parsed, given, strict=True))[1]


@router.get("/runs/{run_id}/events")
async def run_events(
    run_id: str,
    request: Request,
    _slot: DashboardStreamSlot,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    after: _CURSOR_PARAM = None,
    last_event_id: Annotated[str | None, Header(max_length=200)] = None,
) -> sse.EventStreamResponse:
    run, after_seq = await service.run_to_stream(
        conn, viewer.organization_id, run_id, _later(after, last_event_id)
    )
    follow = services.run_feeds.follow(viewer.organization_id, run.id, after_seq)
    return sse.EventStreamResponse(_fragments(request, viewer, run.id, follow))


async def _fragments(
    request: Request, viewer: Viewer, run_id: str, follow: AsyncGenerator[Sequence[bytes] | Marker]
) -> AsyncIterator[bytes]:
    """The feed's batches as ``run`` events of HTML (``id:`` the last event's cursor), ``done`` at the
    run's end (the page's ``sse-close``)."""
    yield b"retry: 1000\n\n"
    async with contextlib.aclosing(follow) as items:
        async for item in items:
            if item is Marker.HEARTBEAT:
                yield sse.PING
            elif item is Marker.END:
                yield _END
                return
            elif not isinstance(item, Marker):
                for start in range(0, len(item), _BATCH):
                    batch = [json.loads(events.data_of(frame)) for frame in item[start : start + _BATCH]]
                    yield _message(request, viewer, run_id, batch)


def _message(request: Request, viewer: Viewer, run_id: str, batch: list[dict[str, Any]]) -> bytes:
    folded = fold(batch)
    context: dict[str, Any] = {"fold": folded, "preview": preview, "run_id": run_id, "streaming": True}
    html = render(request, "runs/_fragment.html", viewer, **context).body
    assert folded.last_cursor is not None
    text = bytes(html).decode().strip().replace("\r", "&#13;")
    return sse.named("run", text, folded.last_cursor)


@router.post("/runs/{run_id}/cancel")
async def cancel_run(
    run_id: str,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    back: Annotated[str | None, Form(max_length=2000)] = None,
) -> Response:
    """Back to the page the button was on; a run that had already ended is simply shown as it ended."""
    with contextlib.suppress(Conflict):
        await service.cancel_run(
            conn, services.signals, services.prices, viewer.organization_id, run_id, now=services.clock.now()
        )
    target = safe_next(back) if back else f"/runs/{quote(run_id, safe='')}"
    return RedirectResponse(target, status_code=303)


@router.post("/runs/{run_id}/approvals")
async def decide_approvals(
    run_id: str,
    viewer: ViewerDep,
    conn: ConnDep,
    services: ServicesDep,
    decision: Annotated[Literal["approve", "reject"], Form()],
    tool_call_id: Annotated[list[str], Form(min_length=1, max_length=64)],
    reason: Annotated[str | None, Form(max_length=2000)] = None,
    back: Annotated[str | None, Form(max_length=2000)] = None,
) -> Response:
    """ "Approve" or "Reject" for every call of the pending approval (the calls the page showed), as
    ``POST /v1/runs/{id}/approvals`` decides them. When the page was stale (someone answered first, the
    wait expired) the run simply shows its state now."""
    approve = decision == "approve"
    decisions = [
        actions.Decision(key, approve, None if approve else (reason or "").strip() or None)
        for key in tool_call_id
    ]
    with contextlib.suppress(Conflict, BadRequest):
        await actions.approve_tool_calls(
            conn, services.signals, viewer.organization_id, run_id, decisions, now=services.clock.now()
        )
    target = safe_next(back) if back else f"/runs/{quote(run_id, safe='')}"
    return RedirectResponse(target, status_code=303)


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@router.get("/artifacts/{artifact_id}")
async def download_artifact(artifact_id: str, viewer: ViewerDep, conn: ConnDep) -> Response:
    """Always plain text and an attachment, whatever type the model gave it: an artifact is never
    rendered by the browser (the security headers add ``nosniff``)."""
    artifact = await service.get_artifact(conn, viewer.organization_id, artifact_id)
    ascii_name = _UNSAFE_NAME.sub("_", artifact.name).strip("._") or "artifact"
    disposition = f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(artifact.name, safe='')}"
    return Response(
        artifact.content,
        media_type="text/plain; charset=utf-8",
        headers={"Content-Disposition": disposition},
    )
