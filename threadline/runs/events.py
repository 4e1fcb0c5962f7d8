"""Run events: numbered per run, rendered once, persisted, then announced.

An event's frame JSON is rendered when it is made and stored as text, so replays and live fan-out send the
same bytes without encoding them again. Its cursor is ``<runId>.<seq>``: it names the run as well as the
position, so one cursor resumes both the run's stream and its thread's stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from threadline.kit.clock import isoformat
from threadline.kit.db import Conn
from threadline.kit.errors import BadRequest, Reason
from threadline.runs.tables import run_events

# The signal announcing committed events (payload: ``announcement``); every process's feeds listen to it.
RUN_EVENTS = "runs.events"
# The type of the last event of every run; the stream's ``[DONE]`` follows it.
RUN_COMPLETED = "run_completed"

_CURSOR = re.compile(r"^(run_[0-9a-z]{26})\.([0-9]{1,9})$")


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    type: str
    data: str  # the frame's JSON
    created_at: datetime


def cursor_of(run_id: str, seq: int) -> str:
    return f"{run_id}.{seq}"


def parse_cursor(cursor: str) -> tuple[str, int]:
    match = _CURSOR.match(cursor)
    if match is None:
        raise BadRequest(
            "The cursor is malformed; pass back the cursor of the last event you processed, unchanged.",
            reason=Reason.INVALID_CURSOR,
        )
    return match[1], int(match[2])


def render(
    run_id: str, thread_id: str, seq: int, type_: str, payload: Mapping[str, Any], at: datetime
) -> Event:
    fields = {
        "type": type_,
        "cursor": cursor_of(run_id, seq),
        "runId": run_id,
        "threadId": thread_id,
        "createdAt": isoformat(at),
        **payload,
    }
    # ASCII only, like every frame (kit.sse): some SSE readers split lines on U+2028.
    return Event(seq, type_, json.dumps(fields, separators=(",", ":")), at)


def frame(run_id: str, event_seq: int, data: str) -> bytes:
    return f"id: {cursor_of(run_id, event_seq)}\ndata: {data}\n\n".encode()


def data_of(frame_: bytes) -> str:
    """The event JSON of a frame made by ``frame`` (the dashboard renders events from the feeds' frames)."""
    return frame_[frame_.index(b"\ndata: ") + 7 : -2].decode()


# Built once, bound per call: every stream's first read (and each read after a missed announcement).
_AFTER = (
    sa.select(run_events.c.seq, run_events.c.type, run_events.c.data, run_events.c.created_at)
    .where(
        run_events.c.run_id == sa.bindparam("run_id"),
        run_events.c.organization_id == sa.bindparam("organization_id"),
        run_events.c.seq > sa.bindparam("seq", type_=sa.Integer),
    )
    .order_by(run_events.c.seq)
)


class EventRepository:
    """The stored events of one organization's runs."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, run_id: str, events: Sequence[Event]) -> None:
        if not events:
            return
        await self._conn.execute(
            run_events.insert(),
            [
                {
                    "run_id": run_id,
                    "seq": event.seq,
                    "organization_id": self._organization_id,
                    "type": event.type,
                    "data": event.data,
                    "created_at": event.created_at,
                }
                for event in events
            ],
        )

    async def after(self, run_id: str, seq: int) -> list[Event]:
        bound = {"run_id": run_id, "organization_id": self._organization_id, "seq": seq}
        rows = await self._conn.execute(_AFTER, bound)
        return [Event(row.seq, row.type, row.data, row.created_at) for row in rows]

    async def of_types(self, run_id: str, types: Sequence[str]) -> list[Event]:
        """The run's events of these types, in order (the run's end reads what its messages said)."""
        query = (
            sa.select(run_events.c.seq, run_events.c.type, run_events.c.data, run_events.c.created_at)
            .where(
                run_events.c.run_id == run_id,
                run_events.c.organization_id == self._organization_id,
                run_events.c.type.in_(types),
            )
            .order_by(run_events.c.seq)
        )
        return [Event(row.seq, row.type, row.data, row.created_at) for row in await self._conn.execute(query)]


def announcement(organization_id: str, run_id: str, events: Sequence[Event]) -> str:
    """``<runId>\n<json>``: a process reads the run id and parses the rest only if it streams that run
    (every process receives every run's announcements)."""
    body = json.dumps(
        {
            "organizationId": organization_id,
            "events": [[event.seq, event.type, event.data] for event in events],
        },
        separators=(",", ":"),
    )
    return f"{run_id}\n{body}"


def announced_run(payload: str) -> str:
    return payload.partition("\n")[0]


@dataclass(frozen=True, slots=True)
class Announced:
    organization_id: str
    run_id: str
    events: list[tuple[int, str, str]]


def parse_announcement(payload: str) -> Announced | None:
    run_id, _, raw = payload.partition("\n")
    try:
        body = json.loads(raw)
        events = [(int(seq), str(type_), str(data)) for seq, type_, data in body["events"]]
        return Announced(str(body["organizationId"]), run_id, events)
    except (ValueError, TypeError, KeyError):
        return None
