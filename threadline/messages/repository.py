"""Message queries, each scoped to one organization (and, for listing, one thread)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.messages.tables import messages

Role = Literal["user", "assistant", "system", "tool"]


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    organization_id: str
    thread_id: str
    run_id: str | None
    role: Role
    content: str
    metadata: dict[str, str]
    created_at: datetime


_COLUMNS = [c for c in messages.c if c.key != "seq"]
_INSERT = messages.insert()
# Built once, bound per call (as ``_INSERT``): every run reads it as it starts, beside its stream's first
# read. The roles are written into the SQL rather than bound as an expanding list, which SQLAlchemy would
# rewrite into the statement's text on every execution.
_HISTORY = (
    sa.select(*_COLUMNS)
    .where(
        messages.c.thread_id == sa.bindparam("thread_id"),
        messages.c.organization_id == sa.bindparam("organization_id"),
        messages.c.role.in_([sa.literal_column(f"'{role}'") for role in ("user", "assistant", "system")]),
        sa.or_(messages.c.role != "assistant", messages.c.content != ""),
        sa.or_(messages.c.run_id.is_(None), messages.c.run_id <= sa.bindparam("up_to_run")),
    )
    .order_by(messages.c.id.desc())
    .limit(sa.bindparam("limit", type_=sa.Integer))
)


def from_row(row: sa.RowMapping) -> Message:
    return Message(
        id=row["id"],
        organization_id=row["organization_id"],
        thread_id=row["thread_id"],
        run_id=row["run_id"],
        role=row["role"],
        content=row["content"],
        metadata=dict(row["meta"]),
        created_at=row["created_at"],
    )


class MessageRepository:
    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, message: Message) -> None:
        # The statement built once, its row bound: built per call with ``values()`` it cost as much CPU as
        # its execution, on a run's creation (profile of 2026-11-27, bench/HISTORY.md).
        row = {
            "id": message.id,
            "organization_id": self._organization_id,
            "thread_id": message.thread_id,
            "run_id": message.run_id,
            "role": message.role,
            "content": message.content,
            "meta": message.metadata,
            "created_at": message.created_at,
        }
        await self._conn.execute(_INSERT, row)

    async def get(self, thread_id: str, message_id: str) -> Message | None:
        query = sa.select(*_COLUMNS).where(
            messages.c.id == message_id,
            messages.c.thread_id == thread_id,
            messages.c.organization_id == self._organization_id,
        )
        row = (await self._conn.execute(query)).mappings().first()
        return from_row(row) if row else None

    async def existing(self, thread_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of ``message_ids`` the thread has."""
        if not message_ids:
            return set()
        query = sa.select(messages.c.id).where(
            messages.c.id.in_(message_ids),
            messages.c.thread_id == thread_id,
            messages.c.organization_id == self._organization_id,
        )
        return set((await self._conn.execute(query)).scalars())

    async def history(self, thread_id: str, *, up_to_run: str, limit: int) -> list[Message]:
        """The thread's newest ``limit`` user, assistant and system messages, oldest first, as a run sees
        them: not the inputs of runs queued after ``up_to_run`` (ids are time-ordered; each answers its
        own). An assistant turn without text (one that only reasoned and called tools, or was cut off before
        its first word) says nothing to the model and is left out."""
        bound = {
            "thread_id": thread_id,
            "organization_id": self._organization_id,
            "up_to_run": up_to_run,
            "limit": limit,
        }
        rows = (await self._conn.execute(_HISTORY, bound)).mappings().all()
        return [from_row(row) for row in reversed(rows)]

    async def page(self, thread_id: str, params: CursorParams) -> tuple[Sequence[Message], str | None]:
        query = sa.select(*_COLUMNS).where(
            messages.c.thread_id == thread_id, messages.c.organization_id == self._organization_id
        )
        rows, next_cursor = await fetch_cursor_page(
            self._conn, query, messages.c.id, params, newest_first=False
        )
        return [from_row(row._mapping) for row in rows], next_cursor
