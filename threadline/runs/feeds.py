"""Live run streams: one feed per run per process, shared by every client streaming that run.

A run's events reach a process as announcements (``runs.events``, over Redis in the distributed shape)
after they were committed. The feed of a run keeps the frames in order; each client streaming the run
holds only its position in that list, so a thousand clients cost one announcement and one list, and a
new event costs each client one wake-up and one write. The database stays the truth: a feed loads the
run's events when its first client arrives, and reads again whenever an announcement leaves a gap (one was
lost, or arrived out of order), after a reconnection to Redis, and once a second while the run is live
and quiet, so a lost announcement delays events by a second at most and never loses one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from enum import Enum

from threadline.kit.db import Database
from threadline.kit.signals import RESET, SignalBus
from threadline.kit.sse import DONE, HEARTBEAT_SECONDS, PING, Heartbeat
from threadline.kit.waiting import wait_event
from threadline.runs import events
from threadline.runs.events import RUN_COMPLETED, RUN_EVENTS
from threadline.runs.repository import RunRepository

log = logging.getLogger(__name__)

_POLL_SECONDS = 1.0


class Marker(Enum):
    """What ``RunFeeds.follow`` yields besides frames."""

    HEARTBEAT = "heartbeat"
    END = "end"


class _Feed:
    def __init__(self, organization_id: str, run_id: str) -> None:
        self.organization_id = organization_id
        self.run_id = run_id
        self.frames: list[bytes] = []  # frames[i] is the event numbered i + 1
        self.done = False
        self.loaded = asyncio.Event()
        self.changed = asyncio.Event()  # pulsed: set and cleared at once, waking every waiting client
        self.stale = asyncio.Event()  # the database may hold events this feed lacks
        self.clients = 0
        self.task: asyncio.Task[None] | None = None
        self.heard_at = time.monotonic()

    def extend(self, announced: list[tuple[int, str, str]]) -> None:
        """Append what follows the frames held; a gap marks the feed stale (the database fills it)."""
        added = False
        for seq, type_, data in announced:
            if seq <= len(self.frames):
                continue
            if seq != len(self.frames) + 1:
                self.stale.set()
                break
            self.frames.append(events.frame(self.run_id, seq, data))
            added = True
            if type_ == RUN_COMPLETED:
                self.done = True
        if added or self.done:
            self.changed.set()
            self.changed.clear()


class RunFeeds:
    def __init__(self, db: Database, signals: SignalBus) -> None:
        self._db = db
        self._feeds: dict[str, _Feed] = {}
        self.closed = asyncio.Event()
        signals.subscribe(self._on_signal)

    def _on_signal(self, topic: str, payload: str) -> None:
        if topic == RUN_EVENTS:
            feed = self._feeds.get(events.announced_run(payload))
            if feed is None:
                return
            announced = events.parse_announcement(payload)
            if announced is None or announced.organization_id != feed.organization_id:
                log.warning("ignored a malformed run announcement")
                return
            feed.heard_at = time.monotonic()
            if feed.loaded.is_set():
                feed.extend(announced.events)
            else:
                feed.stale.set()  # re-read once loaded: the load may predate these events
        elif topic == RESET:
            for feed in self._feeds.values():
                feed.stale.set()

    def close(self) -> None:
        """Ends every stream (at shutdown): clients reconnect elsewhere and resume by cursor."""
        self.closed.set()
        for feed in self._feeds.values():
            feed.changed.set()

    @property
    def followed_runs(self) -> int:
        return len(self._feeds)

    async def stream(self, organization_id: str, run_id: str, after_seq: int) -> AsyncIterator[bytes]:
        """Frames of the run's events after ``after_seq``, live, then ``[DONE]``; ``: ping`` when quiet.

        The caller has checked that the run exists in ``organization_id``."""
        async with contextlib.aclosing(self.follow(organization_id, run_id, after_seq)) as items:
            async for item in items:
                if isinstance(item, Marker):
                    yield PING if item is Marker.HEARTBEAT else DONE
                else:
                    yield b"".join(item)

    async def follow(
        self, organization_id: str, run_id: str, after_seq: int
    ) -> AsyncGenerator[Sequence[bytes] | Marker]:
        """The run's event frames after ``after_seq`` as they come, a batch at a time (everything the
        client has not had yet), ``Marker.HEARTBEAT`` when a quiet stream should show it is alive, and
        ``Marker.END`` after the run's last event. Ends without it when the process shuts down (clients
        resume by cursor). Every stream of run events reads this: the API's (``stream``) and the
        dashboard's. Close it with ``contextlib.aclosing`` so the feed forgets the client at once.

        The caller has checked that the run exists in ``organization_id``."""
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = _Feed(organization_id, run_id)
            feed.task = asyncio.create_task(self._maintain(feed), name=f"feed-{run_id}")
        feed.clients += 1
        try:
            # Heartbeats while the first read waits (the database may be away): the connection stays up
            # and a client that left is noticed.
            while not await wait_event(feed.loaded, HEARTBEAT_SECONDS):
                if self.closed.is_set():
                    return
                yield Marker.HEARTBEAT
            position = after_seq
            heartbeat = Heartbeat(HEARTBEAT_SECONDS)
            while not self.closed.is_set():
                if position < len(feed.frames):
                    batch = feed.frames[position:]
                    position = len(feed.frames)
                    heartbeat.sent()
                    yield batch
                    continue
                if feed.done:
                    yield Marker.END
                    return
                if await heartbeat.wait(feed.changed):
                    yield Marker.HEARTBEAT
        finally:
            feed.clients -= 1
            if feed.clients == 0:
                del self._feeds[run_id]
                if feed.task is not None:
                    feed.task.cancel()

    async def _maintain(self, feed: _Feed) -> None:
        """Loads the feed, then fills it from the database whenever it may lack events."""
        while True:
            try:
                await self._read(feed)
                feed.loaded.set()
                while not feed.done:
                    await wait_event(feed.stale, _POLL_SECONDS)
                    if feed.stale.is_set() or time.monotonic() - feed.heard_at >= _POLL_SECONDS:
                        await self._read(feed)
                return
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is unreachable: streams wait, and the feed retries
                log.warning("run feed %s could not read its events; retrying", feed.run_id, exc_info=True)
                await asyncio.sleep(_POLL_SECONDS)

    async def _read(self, feed: _Feed) -> None:
        feed.stale.clear()
        async with self._db.transaction(write=False) as conn:
            found = await events.EventRepository(conn, feed.organization_id).after(
                feed.run_id, len(feed.frames)
            )
            # Deleted with its thread while streamed: nothing more will come, so the streams end.
            gone = not found and await RunRepository(conn, feed.organization_id).get(feed.run_id) is None
        feed.heard_at = time.monotonic()
        feed.extend([(event.seq, event.type, event.data) for event in found])
        if gone:
            feed.done = True
            feed.changed.set()
            feed.changed.clear()
