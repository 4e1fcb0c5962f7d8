"""The run's outbox: a fact about a run (it ended, it waits for the customer) recorded in the transaction
that made it true, for the domains above runs to read (webhooks deliver them). Runs cannot call those
domains (they sit above it), and a signal published after the commit is lost if the process dies between
the commit and the publish; a row committed with the change is not.

One row per fact, whoever reads it: a reader (``threadline.webhooks.fanout``) takes rows in id order and
deletes them in the transaction that records what it made of them, so every fact is handled once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.runs.repository import Run
from threadline.runs.schemas import RunOut
from threadline.runs.tables import run_outbox

# The event types of a run's end, by the status it ended in.
ENDED = {"completed": "run.completed", "failed": "run.failed", "cancelled": "run.cancelled"}
REQUIRES_ACTION = "run.requires_action"
# Told through the signal bus after such a commit, so readers need not poll to be prompt.
OUTBOX_WRITTEN = "runs.outbox"


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    id: str
    organization_id: str
    run_id: str
    type: str
    data: str  # the run's JSON as RunOut renders it
    created_at: datetime


async def record(conn: Conn, run: Run, type_: str, at: datetime) -> None:
    """Writes the fact in the caller's transaction (``run``: the run as it is after the change)."""
    await conn.execute(
        run_outbox.insert().values(
            id=new_id("evt"),
            organization_id=run.organization_id,
            run_id=run.id,
            type=type_,
            data=RunOut.of(run).model_dump_json(),
            created_at=at,
        )
    )


class OutboxAcrossOrganizations:
    """Every organization's pending facts: read by one reader for all (it fans them out per organization)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def pending(self) -> bool:
        """Whether any fact waits (read first, so an idle reader never takes SQLite's write lock)."""
        return (await self._conn.execute(sa.select(run_outbox.c.id).limit(1))).first() is not None

    async def take(self, limit: int) -> Sequence[OutboxEntry]:
        """The oldest ``limit`` facts, locked so two readers never hand one out twice (SQLite: the write
        transaction already serialises readers)."""
        query = sa.select(run_outbox).order_by(run_outbox.c.id).limit(limit).with_for_update(skip_locked=True)
        rows = (await self._conn.execute(query)).mappings().all()
        return [OutboxEntry(**dict(row)) for row in rows]

    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            await self._conn.execute(run_outbox.delete().where(run_outbox.c.id.in_(ids)))
