"""The live tail: ``GET /v1/logs/stream``, one shared feed per organization and filter per process.

A commit for an organization (``logs.appended``, over Redis in the distributed shape) marks its feeds
stale; each feed then reads the records committed after its head once, and every tail following it takes
the new frames from the feed's list, as run streams take theirs from a run's feed (``runs.feeds``). A
thousand tails of one organization with the same filters cost one read per commit (commits less than
0.1 s apart share one), not a thousand, and no tail polls: the feed alone looks again once a second while
quiet (a lost signal costs a second, never a record). A feed wakes its tails a slice at a time, so other
requests are served between slices. The feeds of one organization read one at a time, so an organization
tailing with many different filters queues behind itself instead of taking the process.

Ids follow commit order (``telemetry.writer``), so positions are exact. A feed holds every match in
(``floor``, ``head``]; a tail at or past ``floor`` sends what the feed holds after its position, and a
tail behind it (it resumed from far back, or it was too slow and the feed dropped what it had not sent)
reads alone until it has caught up. The stream opens with its starting position, so nothing is skipped
and nothing sent twice, across reconnects too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from bisect import bisect_right
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from datetime import datetime, timedelta

from threadline.kit.db import Conn, Database
from threadline.kit.ids import ids_now
from threadline.kit.pagination import encode_cursor
from threadline.kit.signals import RESET, SignalBus
from threadline.kit.sse import DONE, HEARTBEAT_SECONDS, PING, Heartbeat, frame, position
from threadline.kit.waiting import wait_event
from threadline.telemetry.repository import LogFilters, LogRepository, position_before
from threadline.telemetry.schemas import LogRecordOut
from threadline.telemetry.writer import LOGS_APPENDED

log = logging.getLogger(__name__)

# Without a signal (a lost pub/sub message) a feed still looks again this often.
_POLL_SECONDS = 1.0
# A group commit that began before `until` may still be committing just after it.
_UNTIL_GRACE = timedelta(seconds=1)
# A feed reads at most this often: at 50 commits a second, 500 tails then wake 5,000 times a second, not
# 25,000 (each wake-up is a write to a socket), for at most this much more latency.
_READ_INTERVAL_SECONDS = 0.1
# Tails woken per turn of the event loop.
_WAKE_SLICE = 32
# Frames a feed keeps for tails that are behind; past twice this it drops the older half.
_KEEP_FRAMES = 2_000
# Commit marks remembered to drop the second copy of a signal (it follows the first within milliseconds).
_HEARD_MARKS = 4_096


# How a tail writes one record as a frame: the API's JSON frame by default; the dashboard sends HTML. Tails
# share a feed only with tails of the same filters and the same way of writing frames.
RecordFrame = Callable[[str, LogRecordOut], bytes]


def json_frame(cursor: str, record: LogRecordOut) -> bytes:
    return frame(cursor, {"type": "log_record", **record.model_dump(mode="json", by_alias=True)})


async def start_position(conn: Conn, organization_id: str) -> str:
    """Where a tail without a position starts: after the newest record committed (or now, if none)."""
    newest = await LogRepository(conn, organization_id).newest_id()
    return newest or position_before(ids_now())


class _Feed:
    def __init__(self, filters: LogFilters, start: str, record_frame: RecordFrame) -> None:
        self.filters = filters
        self.record_frame = record_frame
        self.head = start  # every record up to here has been examined
        self.floor = start  # every match after here and up to head is in frames
        self.ids: list[str] = []
        self.frames: list[bytes] = []
        self.loaded = asyncio.Event()
        self.waiting: set[asyncio.Event] = set()  # one per tail: woken a slice at a time (`wake`)
        self.stale = asyncio.Event()
        self.read_began: datetime | None = None  # when the latest completed read started
        self.heard_at = time.monotonic()
        self.clients = 0
        self.task: asyncio.Task[None] | None = None

    def extend(self, records: list[LogRecordOut], head: str) -> None:
        for record in records:
            self.ids.append(record.id)
            self.frames.append(self.record_frame(encode_cursor(record.id), record))
        self.head = head
        if len(self.frames) > 2 * _KEEP_FRAMES:
            cut = len(self.frames) - _KEEP_FRAMES
            self.floor = self.ids[cut - 1]
            del self.ids[:cut], self.frames[:cut]

    async def wake(self) -> None:
        """Wakes the tails a slice at a time, letting the loop serve other requests between slices: woken
        at once, 500 tails would write to their sockets in one go and hold every other request that long."""
        tails = list(self.waiting)
        for start in range(0, len(tails), _WAKE_SLICE):
            for woken in tails[start : start + _WAKE_SLICE]:
                woken.set()
            await asyncio.sleep(0)


class _Organization:
    """An organization's feeds, and its turn to read: its feeds read one at a time."""

    def __init__(self) -> None:
        self.feeds: dict[tuple[LogFilters, RecordFrame], _Feed] = {}
        self.turn = asyncio.Lock()


class LogTails:
    """The process's feeds; wakes them when their organization's records are committed, and ends every
    tail at shutdown. ``feed_reads`` and ``catch_up_reads`` count the reads (shared and alone)."""

    def __init__(self, signals: SignalBus) -> None:
        self._organizations: dict[str, _Organization] = {}
        self.closed = asyncio.Event()
        self._heard: dict[str, None] = {}  # recent commit marks, oldest first
        self.feed_reads = 0
        self.catch_up_reads = 0
        signals.subscribe(self._on_signal)

    def _on_signal(self, topic: str, payload: str) -> None:
        if topic == LOGS_APPENDED:
            organization_id, _, mark = payload.partition(" ")
            if mark in self._heard:  # the second copy a publisher hears on Redis
                del self._heard[mark]
                return
            if mark:
                self._heard[mark] = None
                if len(self._heard) > _HEARD_MARKS:
                    del self._heard[next(iter(self._heard))]
            organization = self._organizations.get(organization_id)
            if organization is not None:
                for feed in organization.feeds.values():
                    feed.stale.set()
        elif topic == RESET:
            for organization in self._organizations.values():
                for feed in organization.feeds.values():
                    feed.stale.set()

    def close(self) -> None:
        self.closed.set()
        for organization in self._organizations.values():
            for feed in organization.feeds.values():
                for woken in feed.waiting:
                    woken.set()

    @property
    def followed(self) -> int:
        """Feeds open in this process (one per organization and distinct filters)."""
        return sum(len(organization.feeds) for organization in self._organizations.values())

    async def follow(
        self,
        db: Database,
        organization_id: str,
        filters: LogFilters,
        after_id: str | None,
        record_frame: RecordFrame = json_frame,
    ) -> AsyncIterator[bytes]:
        """Frames of matching records after ``after_id`` (or from now), as they are committed."""
        key = (filters, record_frame)
        shared = self._organizations.get(organization_id)
        existing = None if shared is None else shared.feeds.get(key)
        if existing is not None and existing.loaded.is_set():
            now = existing.head  # examined already: "now" without a read of its own
        else:
            async with db.transaction(write=False) as conn:
                now = await start_position(conn, organization_id)
        # A new feed starts from now even for a tail that resumes from further back: that tail catches up
        # alone, in bounded steps, and the feed never replays history for everyone.
        after_id = now if after_id is None else after_id
        # From here to the `try`, nothing awaits: the feed cannot be dropped before this tail counts.
        organization = self._organizations.get(organization_id)
        if organization is None:
            organization = self._organizations[organization_id] = _Organization()
        feed = organization.feeds.get(key)
        if feed is None:
            feed = organization.feeds[key] = _Feed(filters, now, record_frame)
            feed.task = asyncio.create_task(
                self._maintain(db, organization_id, organization, feed), name="log-feed"
            )
        feed.clients += 1
        try:
            # The starting position first, as a frame without data: a client that reconnects before any
            # record arrived resumes from here (an EventSource keeps it as its Last-Event-ID) instead of
            # from "now" again, which would skip what was committed while it was away.
            yield position(encode_cursor(after_id))
            # Closed here, in the task that closes this generator, not left to the garbage collector: an
            # inner generator abandoned at a ``yield`` is finalized later by a task of its own, which is
            # what made the suite warn "async generator already executing".
            async with contextlib.aclosing(self._tail(db, organization_id, feed, after_id)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            self._leave(organization_id, organization, feed)

    async def _tail(self, db: Database, organization_id: str, feed: _Feed, at: str) -> AsyncGenerator[bytes]:
        until = feed.filters.until
        heartbeat = Heartbeat(HEARTBEAT_SECONDS)
        woken = asyncio.Event()
        feed.waiting.add(woken)
        try:
            while not self.closed.is_set():
                woken.clear()  # the frames are checked below after this: no wake-up is lost
                if not feed.loaded.is_set():
                    # Heartbeats while the first read waits (the database may be away).
                    if not await wait_event(feed.loaded, HEARTBEAT_SECONDS):
                        yield PING
                    continue
                if at < feed.floor:  # behind what the feed holds: catch up alone, in bounded steps
                    self.catch_up_reads += 1
                    async with db.transaction(write=False) as conn:
                        records, at, _ = await LogRepository(conn, organization_id).after(feed.filters, at)
                    if records:
                        heartbeat.sent()
                        yield b"".join(feed.record_frame(encode_cursor(r.id), r) for r in records)
                    elif at < feed.floor:
                        # Nothing was committed after this position: the feed's start is as good a place.
                        at = feed.floor
                    continue
                start = bisect_right(feed.ids, at)
                if start < len(feed.ids):
                    chunk = b"".join(feed.frames[start:])
                    at = feed.ids[-1]
                    heartbeat.sent()
                    yield chunk
                    continue
                at = max(at, feed.head)
                if (
                    until is not None
                    and feed.read_began is not None
                    and feed.read_began >= until + _UNTIL_GRACE
                ):
                    yield DONE  # nothing received before `until` can still arrive
                    return
                if await heartbeat.wait(woken):
                    yield PING
        finally:
            feed.waiting.discard(woken)

    def _leave(self, organization_id: str, organization: _Organization, feed: _Feed) -> None:
        feed.clients -= 1
        if feed.clients == 0:
            del organization.feeds[(feed.filters, feed.record_frame)]
            if feed.task is not None:
                feed.task.cancel()
        if not organization.feeds and self._organizations.get(organization_id) is organization:
            del self._organizations[organization_id]

    async def _maintain(
        self, db: Database, organization_id: str, organization: _Organization, feed: _Feed
    ) -> None:
        """Reads once at once, then once per wake-up: a commit's signal, or a quiet second."""
        while True:
            try:
                if feed.loaded.is_set():
                    # Commits closer together than this share a read, and each tail one write for them.
                    await asyncio.sleep(max(0.0, feed.heard_at + _READ_INTERVAL_SECONDS - time.monotonic()))
                    await wait_event(feed.stale, _POLL_SECONDS)
                    if not feed.stale.is_set() and time.monotonic() - feed.heard_at < _POLL_SECONDS:
                        continue
                async with organization.turn:
                    await self._read(db, organization_id, feed)
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is unreachable: tails wait, and the feed retries
                log.warning("a log feed of %s could not read; retrying", organization_id, exc_info=True)
                await asyncio.sleep(_POLL_SECONDS)

    async def _read(self, db: Database, organization_id: str, feed: _Feed) -> None:
        feed.stale.clear()
        began = ids_now()  # compared with `until`, a moment of receipt
        more = True
        added = False
        while more:
            self.feed_reads += 1
            async with db.transaction(write=False) as conn:
                records, head, more = await LogRepository(conn, organization_id).after(
                    feed.filters, feed.head
                )
            feed.extend(records, head)
            added = added or bool(records)
        feed.heard_at = time.monotonic()
        feed.read_began = began
        feed.loaded.set()
        if added or feed.filters.until is not None:
            await feed.wake()
