"""Automation rows. API queries are scoped to one organization (``AutomationRepository``); the scheduler's
and the log matcher's reach across organizations (they serve them all) and name automations by id
(``AutomationsAcrossOrganizations``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from threadline.automations.tables import automation_firings, automations
from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.kit.statements import InsertOrIgnore
from threadline.runs.tables import runs


@dataclass(frozen=True, slots=True)
class Automation:
    id: str
    organization_id: str
    name: str
    enabled: bool
    trigger: dict[str, Any]
    action: dict[str, Any]
    next_run_at: datetime | None
    last_triggered_at: datetime | None
    last_error: dict[str, str] | None
    created_at: datetime
    updated_at: datetime

    @property
    def trigger_type(self) -> str:
        return str(self.trigger["type"])


def _from_row(row: sa.RowMapping) -> Automation:
    return Automation(
        id=row["id"],
        organization_id=row["organization_id"],
        name=row["name"],
        enabled=bool(row["enabled"]),
        trigger=dict(row["trigger"]),
        action=dict(row["action"]),
        next_run_at=row["next_run_at"],
        last_triggered_at=row["last_triggered_at"],
        last_error=row["last_error"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class _Firings:
    """A firing's marks, written the same way whichever repository the firing goes through (a request's
    ``POST …/trigger`` through ``AutomationRepository``, the scheduler's through the other)."""

    __slots__ = ()
    _conn: Conn

    def _one_row(self, automation_id: str) -> sa.ColumnElement[bool]:
        raise NotImplementedError

    async def record_firing(
        self,
        automation_id: str,
        *,
        at: datetime,
        next_run_at: datetime | None,
        error: Mapping[str, str] | None,
    ) -> None:
        """Left by the firing's own transaction (not an edit: ``updated_at`` stays)."""
        await self._conn.execute(
            automations.update()
            .where(self._one_row(automation_id))
            .values(last_triggered_at=at, next_run_at=next_run_at, last_error=dict(error) if error else None)
        )


class AutomationRepository(_Firings):
    """The automations of one organization: what an API request reads and writes."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, automation: Automation) -> None:
        await self._conn.execute(
            automations.insert().values(
                id=automation.id,
                organization_id=self._organization_id,
                name=automation.name,
                enabled=automation.enabled,
                trigger_type=automation.trigger_type,
                trigger=automation.trigger,
                action=automation.action,
                next_run_at=automation.next_run_at,
                last_triggered_at=automation.last_triggered_at,
                last_error=automation.last_error,
                created_at=automation.created_at,
                updated_at=automation.updated_at,
            )
        )

    async def get(self, automation_id: str, *, lock: bool = False) -> Automation | None:
        """``lock``: as ``AutomationsAcrossOrganizations.get``."""
        query = sa.select(automations).where(
            automations.c.id == automation_id, automations.c.organization_id == self._organization_id
        )
        return await _one(self._conn, query, lock)

    async def page(self, params: CursorParams) -> tuple[Sequence[Automation], str | None]:
        query = sa.select(automations).where(automations.c.organization_id == self._organization_id)
        rows, next_cursor = await fetch_cursor_page(self._conn, query, automations.c.id, params)
        return [_from_row(row._mapping) for row in rows], next_cursor

    async def count(self) -> int:
        query = sa.select(sa.func.count()).where(automations.c.organization_id == self._organization_id)
        return int((await self._conn.execute(query)).scalar_one())

    async def queued_runs(self, at_most: int) -> int:
        """The organization's queued runs, counted up to ``at_most`` (no further: the cap is all that is
        asked, and a backlog must not make each firing slower)."""
        queued = (
            sa.select(sa.literal(1))
            .where(runs.c.organization_id == self._organization_id, runs.c.status == "queued")
            .limit(at_most)
            .subquery()
        )
        return int((await self._conn.execute(sa.select(sa.func.count()).select_from(queued))).scalar_one())

    async def delete(self, automation_id: str) -> None:
        await self._conn.execute(
            automations.delete().where(
                automations.c.id == automation_id, automations.c.organization_id == self._organization_id
            )
        )

    async def save(self, automation: Automation) -> None:
        """Writes every mutable field of ``automation`` back to its row."""
        await self._conn.execute(
            automations.update()
            .where(automations.c.id == automation.id, automations.c.organization_id == self._organization_id)
            .values(
                name=automation.name,
                enabled=automation.enabled,
                trigger_type=automation.trigger_type,
                trigger=automation.trigger,
                action=automation.action,
                next_run_at=automation.next_run_at,
                last_triggered_at=automation.last_triggered_at,
                last_error=automation.last_error,
                updated_at=automation.updated_at,
            )
        )

    def _one_row(self, automation_id: str) -> sa.ColumnElement[bool]:
        return sa.and_(
            automations.c.id == automation_id, automations.c.organization_id == self._organization_id
        )


class AutomationsAcrossOrganizations(_Firings):
    """Automations named by id alone, or all that are due, whichever organization holds them: the
    scheduler's and the log matcher's reads (they serve every organization), and the writes of their firings.
    A request writes through ``AutomationRepository``."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def get(self, automation_id: str, *, lock: bool = False) -> Automation | None:
        """``lock``: row-locked for the rest of the transaction (PostgreSQL; SQLite's writer holds the
        database), so two processes firing the same automation take turns and the second sees what the
        first wrote."""
        return await _one(self._conn, sa.select(automations).where(automations.c.id == automation_id), lock)

    def _one_row(self, automation_id: str) -> sa.ColumnElement[bool]:
        return automations.c.id == automation_id

    async def due(self, now: datetime, limit: int) -> list[str]:
        """Enabled schedules whose time has come, round robin across organizations: every organization's
        longest overdue first, then every one's second, and so on (within a round, the longest overdue
        first), so that no organization's many schedules go before another's few."""
        turn = sa.func.row_number().over(
            partition_by=automations.c.organization_id,
            order_by=(automations.c.next_run_at, automations.c.id),
        )
        ranked = (
            sa.select(automations.c.id, automations.c.next_run_at, turn.label("turn"))
            .where(
                automations.c.next_run_at <= now,
                automations.c.enabled.is_(True),
                automations.c.trigger_type == "schedule",
            )
            .subquery()
        )
        query = sa.select(ranked.c.id).order_by(ranked.c.turn, ranked.c.next_run_at, ranked.c.id).limit(limit)
        return list((await self._conn.execute(query)).scalars())

    async def log_triggered(self) -> list[Automation]:
        """Every enabled log-triggered automation (the matcher keeps them in memory)."""
        query = sa.select(automations).where(
            automations.c.trigger_type == "log", automations.c.enabled.is_(True)
        )
        return [_from_row(row) for row in (await self._conn.execute(query)).mappings()]

    async def take_firing(self, automation_id: str) -> dict[str, Any] | None:
        """The record of the firing owed for the automation, now no longer owed (once the transaction
        commits); None if none is. Lock the automation first: its deletion removes this row after it."""
        where = automation_firings.c.automation_id == automation_id
        query = sa.select(automation_firings.c.record).where(where).with_for_update()
        row = (await self._conn.execute(query)).first()
        if row is None:
            return None
        await self._conn.execute(automation_firings.delete().where(where))
        return dict(row.record)

    async def owed_firings(self) -> list[str]:
        """Automations owed a firing (left by a process that stopped before firing them, or not yet
        fired)."""
        query = sa.select(automation_firings.c.automation_id)
        return list((await self._conn.execute(query)).scalars())


async def _one(conn: Conn, query: sa.Select[Any], lock: bool) -> Automation | None:
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    return _from_row(row) if row else None


def owe_firings(
    connection: Connection, firings: Sequence[Mapping[str, Any]], insert_or_ignore: InsertOrIgnore
) -> None:
    """Records firings owed (``automation_id``, ``organization_id``, ``record``, ``matched_at``) in the
    caller's transaction, the log writer's: a plain connection, since it runs on the writer's thread. An
    automation already owed one keeps it (``insert_or_ignore``: the database's, from the composition root)."""
    connection.execute(insert_or_ignore(automation_firings, ["automation_id"]), list(firings))
