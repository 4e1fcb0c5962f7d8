"""Many requests' writes of one kind, one transaction (``GroupCommit``)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from threadline.kit.db import Database

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class GroupCommit(Generic[T, R]):
    """Concurrent writes of one kind, many requests to one transaction.

    A request submits its item and waits; the committer writes every item that arrived while the previous
    commit was running, in one transaction, then answers all of their requests at once. The first item on
    an idle committer is written at once (no timer); under load each commit carries more items, so the cost
    of making them durable (``BEGIN IMMEDIATE`` and an fsync on SQLite, a round trip and a WAL flush on
    PostgreSQL) is shared instead of paid per request. ``submit`` returns only after the item's transaction
    has committed, so a request answered 2xx is durable whatever happens to the process next.

    Groups are taken in submission order, and items in a group are written in that order. A group weighs
    at most ``max_weight`` (items weigh 1 unless ``weigh`` says otherwise: an intake request weighs its
    records), but always holds at least one item. A group that fails because of its data
    (``IntegrityError``, ``DataError``: a row the database refuses) is retried item by item, so one
    request's bad data never fails the others; any other failure fails the group.

    ``write`` may return something about what it wrote (the log writer: the records a watch wanted, with
    their ids); ``committed`` receives it on the event loop once the transaction has committed, before the
    requests are answered. Its failures are logged: the data is committed either way.

    This is the one exception to "the request's session commits": the committer owns its transactions, so
    a request that uses it must not also hold a write transaction of its own (it would wait for itself).
    ``write_async`` instead of ``write``: the group is handed to something that commits it elsewhere (the
    log writer's store process on SQLite, ``telemetry.log_store``), awaited on the event loop while this
    process's turn to write is held (``Database.write_turn``), so no thread of ours competes with the loop
    for the interpreter while it waits. It must commit or raise; failures are handled as above.
    """

    _TURN_SECONDS = 0.05

    def __init__(
        self,
        db: Database,
        write: Callable[[Connection, Sequence[T]], R] | None = None,
        *,
        write_async: Callable[[Sequence[T]], Awaitable[R]] | None = None,
        name: str,
        committed: Callable[[Sequence[T], R], None] | None = None,
        weigh: Callable[[T], int] | None = None,
        max_weight: int = 1000,
    ) -> None:
        """``write`` runs inside the group's transaction, on a worker thread on SQLite: plain, short and
        synchronous (the process's other writers wait for it). Exactly one of ``write`` and
        ``write_async`` is given."""
        if (write is None) == (write_async is None):
            raise TypeError("GroupCommit takes exactly one of write and write_async")
        self._db = db
        self._write = write
        self._write_async = write_async
        self._committed = committed
        self._weigh = weigh
        self._max_weight = max_weight
        self._name = name
        self._pending: deque[tuple[T, asyncio.Future[None]]] = deque()  # appended on the loop
        self._lock = threading.Lock()  # ... taken by the committing thread
        self._flusher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the flusher's, while there is one

    async def submit(self, item: T) -> None:
        """Returns once ``item`` is committed; raises what its transaction raised if it was not. A caller
        that goes away cancels only its own wait: the item was queued and is committed anyway."""
        await self.enqueue(item)

    def enqueue(self, item: T) -> asyncio.Future[None]:
        """``submit`` for a caller that awaits the future itself, which it must do at once: the intake
        waits there, a few coroutine frames shallower (each frame is paid again when the commit wakes
        the request)."""
        # While a flusher runs, the running loop is its loop: no ``asyncio.get_running_loop()``, which on
        # Python 3.11 makes a getpid() system call each time (one per request under load, measured with
        # strace on the intake; python/cpython#100363 dropped the check in 3.12).
        loop = self._loop
        if loop is None or self._flusher is None:
            loop = asyncio.get_running_loop()
        # No done-callback to mark failures as seen: a caller that goes away cancels this future (its
        # ``await`` does), and ``_fail`` skips futures already done; one cancelled after its failure was
        # set retrieves it on waking. One callback fewer to schedule per request on the intake's path.
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._pending.append((item, future))
        if self._flusher is None:
            self._loop = loop
            self._flusher = loop.create_task(self._flush(), name=f"threadline-group-commit-{self._name}")
        return future

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                try:
                    if self._write_async is not None:
                        async with self._db.write_turn():
                            await self._drain_async()
                    else:
                        await self._db.write_session(lambda connection: self._drain(connection, loop))
                except Exception as exc:  # no connection at all: everyone waiting hears it
                    with self._lock:
                        waiting, self._pending = list(self._pending), deque()
                    _fail(waiting, exc)
        finally:
            self._flusher = None

    def _drain(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        """On SQLite this runs on a worker thread: a group arriving while the previous one commits goes
        next without waiting for a turn of the event loop."""
        for group in self._turn():
            self._commit(connection, group, loop)

    async def _drain_async(self) -> None:
        for group in self._turn():
            await self._commit_async(group)

    def _turn(self) -> Iterator[list[tuple[T, asyncio.Future[None]]]]:
        """Groups back to back until nothing is pending or the turn has lasted ``_TURN_SECONDS`` (other
        writers of the process wait for the turn)."""
        deadline = time.monotonic() + self._TURN_SECONDS
        while time.monotonic() < deadline:
            with self._lock:
                group = self._take_group()
            if not group:
                return
            yield group

    def _take_group(self) -> list[tuple[T, asyncio.Future[None]]]:
        pending, weigh = self._pending, self._weigh
        if weigh is None:
            return [pending.popleft() for _ in range(min(len(pending), self._max_weight))]
        group: list[tuple[T, asyncio.Future[None]]] = []
        weight = 0
        while pending:
            next_weight = weight + weigh(pending[0][0])
            if group and next_weight > self._max_weight:
                break
            weight = next_weight
            group.append(pending.popleft())
        return group

    def _commit(
        self,
        connection: Connection,
        group: list[tuple[T, asyncio.Future[None]]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        assert self._write is not None
        items = [item for item, _ in group]
        try:
            with connection.begin():
                result = self._write(connection, items)
        except Exception as exc:
            if _data_refused(exc) and len(group) > 1:
                for one in group:
                    self._commit(connection, [one], loop)
            else:
                loop.call_soon_threadsafe(_fail, group, exc)
            return
        loop.call_soon_threadsafe(self._succeed, group, items, result)

    async def _commit_async(self, group: list[tuple[T, asyncio.Future[None]]]) -> None:
        """``_commit``'s twin for ``write_async``, on the loop."""
        assert self._write_async is not None
        items = [item for item, _ in group]
        try:
            result = await self._write_async(items)
        except Exception as exc:
            if _data_refused(exc) and len(group) > 1:
                for one in group:
                    await self._commit_async([one])
            else:
                _fail(group, exc)
            return
        self._succeed(group, items, result)

    def _succeed(self, group: list[tuple[T, asyncio.Future[None]]], items: list[T], result: R) -> None:
        if self._committed is not None:
            try:
                self._committed(items, result)
            except Exception:  # the items are committed either way
                log.exception("after the commit of %s", self._name)
        for _, future in group:
            if not future.done():
                future.set_result(None)

    async def aclose(self) -> None:
        """Finish what was accepted: every waiting request gets its answer before the process ends."""
        while self._flusher is not None:
            await asyncio.shield(self._flusher)


def _data_refused(exc: Exception) -> bool:
    """The data's fault, not the database's: retried item by item so one request's rows fail alone."""
    return isinstance(exc, sa.exc.IntegrityError | sa.exc.DataError)


def _fail(group: Sequence[tuple[Any, asyncio.Future[None]]], exc: BaseException) -> None:
    for _, future in group:
        if not future.done():
            future.set_exception(exc)
