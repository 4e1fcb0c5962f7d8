"""Thread rules: ownership, partial updates, and deletion of everything a thread holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy.engine import Connection

from threadline.idempotency.store import Answer, write_answers
from threadline.kit.db import Conn, Database
from threadline.kit.errors import BadRequest, NotFound, Reason
from threadline.kit.group_commit import GroupCommit
from threadline.kit.ids import new_id
from threadline.threads.repository import Thread, ThreadRepository, insert_threads


@dataclass(frozen=True, slots=True)
class Answered:
    """A thread with its request's idempotency answer, committed together (``idempotency.carried``)."""

    thread: Thread
    answer: Answer


ThreadInserts = GroupCommit[Thread | Answered, None]


def _insert(connection: Connection, new: Sequence[Thread | Answered]) -> None:
    insert_threads(connection, [item.thread if isinstance(item, Answered) else item for item in new])
    write_answers(connection, [item.answer for item in new if isinstance(item, Answered)])


def thread_inserts(db: Database) -> ThreadInserts:
    """The process's committer of ``POST /v1/threads`` (``Services.thread_inserts``)."""
    return GroupCommit(db, _insert, name="threads")


def new_thread(organization_id: str, title: str | None, metadata: dict[str, str], *, now: datetime) -> Thread:
    """A thread not yet written: ``insert_committed`` writes it. Queue it in the same step of the event loop
    (no ``await`` between), so that within a process ids follow commit order just as they did with one
    transaction per request."""
    return Thread(
        id=new_id("thr"),
        organization_id=organization_id,
        title=title,
        metadata=metadata,
        message_count=0,
        created_at=now,
        updated_at=now,
    )


async def create_thread(
    conn: Conn, organization_id: str, *, title: str | None, metadata: dict[str, str], now: datetime
) -> Thread:
    """A thread in the caller's transaction (work that creates a thread among other writes)."""
    thread = new_thread(organization_id, title, metadata, now=now)
    await ThreadRepository(conn, organization_id).insert(thread)
    return thread


async def insert_committed(inserts: ThreadInserts, thread: Thread, answer: Answer | None = None) -> None:
    """``thread`` committed with whatever other threads the process is creating at the moment (group
    commit: one transaction and one fsync for many requests), and ``answer``, its request's idempotency
    answer, in the same transaction; returns once it is durable."""
    await inserts.submit(thread if answer is None else Answered(thread, answer))


async def create_thread_committed(
    inserts: ThreadInserts,
    organization_id: str,
    *,
    title: str | None,
    metadata: dict[str, str],
    now: datetime,
) -> Thread:
    """A thread on its own (``insert_committed``)."""
    thread = new_thread(organization_id, title, metadata, now=now)
    await insert_committed(inserts, thread)
    return thread


async def get_thread(conn: Conn, organization_id: str, thread_id: str) -> Thread:
    thread = await ThreadRepository(conn, organization_id).get(thread_id)
    if thread is None:
        raise NotFound(f"Thread {thread_id} was not found.")
    return thread


async def update_thread(
    conn: Conn, organization_id: str, thread_id: str, changes: Mapping[str, object], now: datetime
) -> Thread:
    """``changes`` holds only the fields the client sent (so ``title: null`` clears, absence keeps)."""
    if "metadata" in changes and changes["metadata"] is None:
        raise BadRequest("metadata cannot be null; send {} to clear it.", reason=Reason.VALIDATION_FAILED)
    thread = await get_thread(conn, organization_id, thread_id)
    title = changes.get("title", thread.title)
    metadata = changes.get("metadata")
    await ThreadRepository(conn, organization_id).update(
        thread_id,
        title=title if isinstance(title, str) else None,
        metadata=dict(metadata) if isinstance(metadata, dict) else thread.metadata,
        at=now,
    )
    return await get_thread(conn, organization_id, thread_id)


class ThreadDeletion(Protocol):
    """``DELETE /v1/threads/{id}``: the thread's active runs end (cancelled, charged) before it goes, which
    ``runs`` does (``runs.service.ThreadDeletionWithRuns``); threads, below runs, receive it as this."""

    async def __call__(self, conn: Conn, organization_id: str, thread_id: str) -> Thread: ...


async def delete_thread(conn: Conn, organization_id: str, thread_id: str) -> Thread:
    """Messages (and, as they arrive, runs, events and artifacts) go with it: foreign keys cascade."""
    thread = await get_thread(conn, organization_id, thread_id)
    await ThreadRepository(conn, organization_id).delete(thread_id)
    return thread
