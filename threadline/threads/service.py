"""Thread rules: ownership, partial updates, and deletion of everything a thread holds."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from threadline.kit.db import Conn, Database
from threadline.kit.errors import BadRequest, NotFound, Reason
from threadline.kit.group_commit import GroupCommit
from threadline.kit.ids import new_id
from threadline.threads.repository import Thread, ThreadRepository, insert_threads

ThreadInserts = GroupCommit[Thread, None]


def thread_inserts(db: Database) -> ThreadInserts:
    """The process's committer of ``POST /v1/threads`` (``Services.thread_inserts``)."""
    return GroupCommit(db, insert_threads, name="threads")


def _new_thread(organization_id: str, title: str | None, metadata: dict[str, str], now: datetime) -> Thread:
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
    thread = _new_thread(organization_id, title, metadata, now)
    await ThreadRepository(conn, organization_id).insert(thread)
    return thread


async def create_thread_committed(
    inserts: ThreadInserts,
    organization_id: str,
    *,
    title: str | None,
    metadata: dict[str, str],
    now: datetime,
) -> Thread:
    """A thread on its own, committed with whatever other threads the process is creating at the moment
    (group commit: one transaction and one fsync for many requests); returns once it is durable.

    The id is made and the thread queued in one step of the event loop, so within a process ids follow
    commit order just as they did with one transaction per request."""
    thread = _new_thread(organization_id, title, metadata, now)
    await inserts.submit(thread)
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
