"""Thread queries, each scoped to one organization."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from threadline.kit.db import Conn, UtcDateTime
from threadline.threads.tables import threads


@dataclass(frozen=True, slots=True)
class Thread:
    id: str
    organization_id: str
    title: str | None
    metadata: dict[str, str]
    message_count: int
    created_at: datetime
    updated_at: datetime
    active_run_id: str | None = None


_COLUMNS = [c for c in threads.c if c.key not in ("seq", "search_text")]


def from_row(row: sa.RowMapping) -> Thread:
    return Thread(
        id=row["id"],
        organization_id=row["organization_id"],
        title=row["title"],
        metadata=dict(row["meta"]),
        message_count=row["message_count"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        active_run_id=row["active_run_id"],
    )


def search_text(title: str | None, metadata: Mapping[str, str]) -> str:
    """What thread search reads: the title and the metadata values."""
    return "\n".join([title or "", *metadata.values()])


class ThreadRepository:
    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    def _where(self, thread_id: str) -> sa.ColumnElement[bool]:
        return sa.and_(threads.c.id == thread_id, threads.c.organization_id == self._organization_id)

    async def insert(self, thread: Thread) -> None:
        await self._conn.execute(threads.insert(), [_new_row(thread, self._organization_id)])

    async def count(self, cap: int) -> tuple[int, bool]:
        """The organization's threads, counted up to ``cap`` on the (organization, id) index (an exact
        count of 100,000 threads is a scan of them all on PostgreSQL); the flag says the cap was reached."""
        newest = (
            sa.select(threads.c.id)
            .where(threads.c.organization_id == self._organization_id)
            .order_by(threads.c.id.desc())
            .limit(cap)
            .subquery()
        )
        counted = int((await self._conn.execute(sa.select(sa.func.count()).select_from(newest))).scalar_one())
        return counted, counted >= cap

    async def get(self, thread_id: str, *, for_update: bool = False) -> Thread | None:
        bound = {"thread": thread_id, "organization": self._organization_id}
        row = (await self._conn.execute(_GET_FOR_UPDATE if for_update else _GET, bound)).mappings().first()
        return from_row(row) if row else None

    async def update(
        self, thread_id: str, *, title: str | None, metadata: dict[str, str], at: datetime
    ) -> None:
        await self._conn.execute(
            threads.update()
            .where(self._where(thread_id))
            .values(
                title=title, meta=metadata, search_text=search_text(title, metadata), updated_at=_later(at)
            )
        )

    async def record_message(self, thread_id: str, at: datetime) -> bool:
        """One more message: counted in the database (concurrent writers never lose one)."""
        bound = {"thread": thread_id, "organization": self._organization_id, "at": at}
        result = await self._conn.execute(_RECORD_MESSAGE, bound)
        return result.rowcount == 1

    async def delete(self, thread_id: str) -> None:
        await self._conn.execute(threads.delete().where(self._where(thread_id)))


def insert_threads(connection: Connection, new: Sequence[Thread]) -> None:
    """Insert ``new`` in one statement (a group commit's write, ``kit.group_commit``): each row is written
    for the organization its ``Thread`` was made for, which the service took from the caller's key."""
    connection.execute(threads.insert(), [_new_row(thread, thread.organization_id) for thread in new])


def _new_row(thread: Thread, organization_id: str) -> dict[str, object]:
    return {
        "id": thread.id,
        "organization_id": organization_id,
        "title": thread.title,
        "meta": thread.metadata,
        "search_text": search_text(thread.title, thread.metadata),
        "message_count": 0,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
    }


def _later(at: datetime | sa.BindParameter[datetime]) -> sa.ColumnElement[datetime]:
    """``updated_at`` never moves backwards, whichever of two concurrent writers commits last."""
    stamp = at if isinstance(at, sa.BindParameter) else sa.literal(at, type_=UtcDateTime())
    return sa.case((threads.c.updated_at < stamp, stamp), else_=threads.c.updated_at)


# Built once, bound per call: the statements of every run's creation (and every message's append).
_OF_ORGANIZATION = sa.and_(
    threads.c.id == sa.bindparam("thread"), threads.c.organization_id == sa.bindparam("organization")
)
_GET = sa.select(*_COLUMNS).where(_OF_ORGANIZATION)
_GET_FOR_UPDATE = _GET.with_for_update()
_RECORD_MESSAGE = (
    threads.update()
    .where(_OF_ORGANIZATION)
    .values(
        message_count=threads.c.message_count + 1,
        updated_at=_later(sa.bindparam("at", type_=UtcDateTime())),
    )
)
