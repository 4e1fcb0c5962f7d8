"""Message rules: a message belongs to a thread of the caller's organization, and appending one updates
the thread's count and time in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from threadline.kit.db import Conn
from threadline.kit.errors import NotFound
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams
from threadline.messages.repository import Message, MessageRepository, Role
from threadline.threads.repository import ThreadRepository
from threadline.threads.service import get_thread


async def append_message(
    conn: Conn,
    organization_id: str,
    thread_id: str,
    *,
    role: Role,
    content: str,
    metadata: dict[str, str],
    run_id: str | None = None,
    message_id: str | None = None,
    now: datetime,
) -> Message:
    """``message_id``: a run names its message before writing it (its events carry the id)."""
    if not await ThreadRepository(conn, organization_id).record_message(thread_id, now):
        raise NotFound(f"Thread {thread_id} was not found.")
    message = Message(
        id=message_id or new_id("msg"),
        organization_id=organization_id,
        thread_id=thread_id,
        run_id=run_id,
        role=role,
        content=content,
        metadata=metadata,
        created_at=now,
    )
    await MessageRepository(conn, organization_id).insert(message)
    return message


async def get_message(conn: Conn, organization_id: str, thread_id: str, message_id: str) -> Message:
    message = await MessageRepository(conn, organization_id).get(thread_id, message_id)
    if message is None:
        raise NotFound(f"Message {message_id} was not found in thread {thread_id}.")
    return message


async def list_messages(
    conn: Conn, organization_id: str, thread_id: str, params: CursorParams
) -> tuple[Sequence[Message], str | None]:
    await get_thread(conn, organization_id, thread_id)  # 404 for a thread the caller cannot see
    return await MessageRepository(conn, organization_id).page(thread_id, params)
