"""The live tail: ``GET /v1/logs/stream``.

A tail reads the records committed after its position, sends them, and sleeps until the writer of any
process announces a commit for its organization (``logs.appended``, over Redis in the distributed shape),
for a second at most (a lost signal costs a second, never a record). Ids follow commit order
(``telemetry.writer``) and the stream opens with its starting position, so "after my position" is exact:
nothing is skipped, nothing sent twice, across reconnects too.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from threadline.kit.clock import utcnow
from threadline.kit.db import Conn, Database
from threadline.kit.pagination import encode_cursor
from threadline.kit.signals import RESET, SignalBus
from threadline.kit.sse import DONE, HEARTBEAT_SECONDS, PING, frame, position
from threadline.kit.waiting import wait_event
from threadline.telemetry.repository import LogFilters, LogRepository, position_before
from threadline.telemetry.schemas import LogRecordOut
from threadline.telemetry.writer import LOGS_APPENDED

# How a tail writes one record as a frame: the API's JSON frame by default; the dashboard sends HTML.
RecordFrame = Callable[[str, LogRecordOut], bytes]

# Without a signal (a lost pub/sub message) a tail still looks again this often.
_POLL_SECONDS = 1.0
# A group commit that began before `until` may still be committing just after it.
_UNTIL_GRACE = timedelta(seconds=1)


def json_frame(cursor: str, record: LogRecordOut) -> bytes:
    return frame(cursor, {"type": "log_record", **record.model_dump(mode="json", by_alias=True)})


async def start_position(conn: Conn, organization_id: str) -> str:
    """Where a tail without a position starts: after the newest record committed (or now, if none)."""
    newest = await LogRepository(conn, organization_id).newest_id()
    return newest or position_before(utcnow())


class LogTails:
    """Wakes the tails of an organization when its records are committed, and ends them all at shutdown."""

    def __init__(self, signals: SignalBus) -> None:
        self._waiting: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        self.closed = asyncio.Event()
        signals.subscribe(self._on_signal)

    def _on_signal(self, topic: str, payload: str) -> None:
        if topic == LOGS_APPENDED:
            for event in self._waiting.get(payload, ()):
                event.set()
        elif topic == RESET:
            for events in self._waiting.values():
                for event in events:
                    event.set()

    def close(self) -> None:
        self.closed.set()
        for events in self._waiting.values():
            for event in events:
                event.set()

    async def follow(
        self,
        db: Database,
        organization_id: str,
        filters: LogFilters,
        after_id: str | None,
        record_frame: RecordFrame = json_frame,
    ) -> AsyncIterator[bytes]:
        """Frames of matching records after ``after_id`` (or from now), as they are committed."""
        woken = asyncio.Event()
        self._waiting[organization_id].add(woken)
        try:
            if after_id is None:
                async with db.transaction(write=False) as conn:
                    after_id = await start_position(conn, organization_id)
            # The starting position first, as a frame without data: a client that reconnects before any
            # record arrived resumes from here (an EventSource keeps it as its Last-Event-ID) instead of
            # from "now" again, which would skip what was committed while it was away.
            yield position(encode_cursor(after_id))
            last_sent = time.monotonic()
            while not self.closed.is_set():
                woken.clear()
                async with db.transaction(write=False) as conn:
                    records, after_id = await LogRepository(conn, organization_id).after(filters, after_id)
                for record in records:
                    yield record_frame(encode_cursor(record.id), record)
                if records:
                    last_sent = time.monotonic()
                    continue
                if filters.until is not None and utcnow() >= filters.until + _UNTIL_GRACE:
                    yield DONE  # nothing received before `until` can still arrive
                    return
                await wait_event(woken, _POLL_SECONDS)
                # By the clock, not by wake-ups: an organization busy with records this tail filters out
                # wakes it constantly, and its connection must still see a heartbeat.
                if time.monotonic() - last_sent >= HEARTBEAT_SECONDS:
                    last_sent = time.monotonic()
                    yield PING
        finally:
            events = self._waiting.get(organization_id)
            if events is not None:
                events.discard(woken)
                if not events:
                    del self._waiting[organization_id]
