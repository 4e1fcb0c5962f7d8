"""Run queries. Those an API request makes are scoped to one organization (``RunRepository``); the
executor's lease queries reach across organizations (it serves them all) and name runs by id
(``RunsAcrossOrganizations``), as its claim does (``runs.claim``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from threadline.agent import tool_entries
from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.runs.tables import runs
from threadline.threads.tables import threads

Status = Literal["queued", "running", "requires_action", "completed", "failed", "cancelled"]
# Active: the thread is busy (multitask rules, cancel). A run waiting for its caller is active but holds no
# run slot: only a ``running`` run with a lease owner is executing somewhere.
ACTIVE: tuple[Status, ...] = ("queued", "running", "requires_action")
BUSY: tuple[Status, ...] = ("running", "requires_action")
ENDED: tuple[Status, ...] = ("completed", "failed", "cancelled")
# How long a run waits for its caller by default, and at most (stated with the tool entries, which agents
# take too; re-exported here, below the service and the schemas that both read them).
DEFAULT_ACTION_TIMEOUT_SECONDS = tool_entries.DEFAULT_ACTION_TIMEOUT_SECONDS
MAX_ACTION_TIMEOUT_SECONDS = tool_entries.MAX_ACTION_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class Run:
    id: str
    organization_id: str
    thread_id: str
    status: Status
    model: str
    instructions: str | None
    automation_id: str | None
    metadata: dict[str, str]
    error_code: str | None
    error_message: str | None
    input_tokens: int
    output_tokens: int
    event_count: int
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    lease_owner: str | None = None
    tools: list[dict[str, Any]] | None = None
    action_timeout_seconds: int = 600
    required_action: dict[str, Any] | None = None
    action_expires_at: datetime | None = None
    agent_state: str | None = None
    agent_id: str | None = None
    agent_version: int | None = None
    response_format: dict[str, Any] | None = None

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE


def among(column: sa.ColumnElement[str], statuses: tuple[Status, ...]) -> sa.ColumnElement[bool]:
    """``column IN ('queued', ...)`` with the statuses written into the SQL: given as values, SQLAlchemy
    binds them as an expanding parameter and rewrites the cached statement's text on every execution (a
    third of the CPU of ``active_of_thread`` on a run's creation: profile of 2026-11-27, bench/HISTORY.md).
    The statuses are this module's constants, never a caller's input."""
    return column.in_([sa.literal_column(f"'{status}'") for status in statuses])


def from_row(row: sa.RowMapping) -> Run:
    return Run(
        id=row["id"],
        organization_id=row["organization_id"],
        thread_id=row["thread_id"],
        status=row["status"],
        model=row["model"],
        instructions=row["instructions"],
        automation_id=row["automation_id"],
        metadata=dict(row["meta"]),
        error_code=row["error_code"],
        error_message=row["error_message"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        event_count=row["event_count"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        lease_owner=row["lease_owner"],
        tools=row["tools"],
        action_timeout_seconds=row["action_timeout_seconds"],
        required_action=row["required_action"],
        action_expires_at=row["action_expires_at"],
        agent_state=row["agent_state"],
        agent_id=row["agent_id"],
        agent_version=row["agent_version"],
        response_format=row["response_format"],
    )


_COLUMNS = [c for c in runs.c if c.key != "lease_expires_at"]


class RunRepository:
    """The runs of one organization: what an API request reads and creates."""

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, run: Run) -> None:
        row = {
            "id": run.id,
            "organization_id": self._organization_id,
            "thread_id": run.thread_id,
            "status": run.status,
            "model": run.model,
            "instructions": run.instructions,
            "automation_id": run.automation_id,
            "meta": run.metadata,
            "created_at": run.created_at,
            "tools": run.tools,
            "action_timeout_seconds": run.action_timeout_seconds,
            "agent_id": run.agent_id,
            "agent_version": run.agent_version,
            "response_format": run.response_format,
        }
        await self._conn.execute(_INSERT, row)

    async def get(self, run_id: str, *, for_update: bool = False) -> Run | None:
        """``for_update``: row-locked for the rest of the transaction (a cancel, an interrupt, a deletion)."""
        bound = {"run_id": run_id, "organization_id": self._organization_id}
        query = _GET_OF_ORGANIZATION_FOR_UPDATE if for_update else _GET_OF_ORGANIZATION
        row = (await self._conn.execute(query, bound)).mappings().first()
        return from_row(row) if row else None

    async def page_of_thread(self, thread_id: str, params: CursorParams) -> tuple[Sequence[Run], str | None]:
        query = sa.select(*_COLUMNS).where(
            runs.c.thread_id == thread_id, runs.c.organization_id == self._organization_id
        )
        rows, next_cursor = await fetch_cursor_page(self._conn, query, runs.c.id, params)
        return [from_row(row._mapping) for row in rows], next_cursor

    async def newest(self, limit: int) -> list[Run]:
        """The organization's most recent runs, across its threads."""
        query = (
            sa.select(*_COLUMNS)
            .where(runs.c.organization_id == self._organization_id)
            .order_by(runs.c.id.desc())
            .limit(limit)
        )
        return [from_row(row) for row in (await self._conn.execute(query)).mappings()]

    async def page_of_automation(
        self, automation_id: str, params: CursorParams
    ) -> tuple[Sequence[Run], str | None]:
        query = sa.select(*_COLUMNS).where(
            runs.c.automation_id == automation_id, runs.c.organization_id == self._organization_id
        )
        rows, next_cursor = await fetch_cursor_page(self._conn, query, runs.c.id, params)
        return [from_row(row._mapping) for row in rows], next_cursor

    async def active_of_thread(self, thread_id: str) -> list[Run]:
        bound = {"thread_id": thread_id, "organization_id": self._organization_id}
        return [from_row(row) for row in (await self._conn.execute(_ACTIVE_OF_THREAD, bound)).mappings()]

    async def refresh_active_run(self, thread_id: str) -> None:
        """``RunsAcrossOrganizations.refresh_active_run``, for a thread of this organization."""
        bound = {"thread_id": thread_id, "of_organization": self._organization_id}
        await self._conn.execute(_REFRESH_ACTIVE_RUN_OF_ORGANIZATION, bound)

    async def latest_of_thread(self, thread_id: str) -> Run | None:
        query = (
            sa.select(*_COLUMNS)
            .where(runs.c.thread_id == thread_id, runs.c.organization_id == self._organization_id)
            .order_by(runs.c.id.desc())
            .limit(1)
        )
        row = (await self._conn.execute(query)).mappings().first()
        return from_row(row) if row else None


# Built once, bound per call: the statements on the path from a run's creation to its first event and
# those of an executing run (one per burst of events). Built per call, each cost more CPU than it took to
# run on SQLite (profile of 2026-11-26, bench/HISTORY.md).
_INSERT = runs.insert()
_GET_OF_ORGANIZATION = sa.select(*_COLUMNS).where(
    runs.c.id == sa.bindparam("run_id"), runs.c.organization_id == sa.bindparam("organization_id")
)
_GET_OF_ORGANIZATION_FOR_UPDATE = _GET_OF_ORGANIZATION.with_for_update()
_GET = sa.select(*_COLUMNS).where(runs.c.id == sa.bindparam("run_id"))
_GET_FOR_UPDATE = _GET.with_for_update()
_ACTIVE_OF_THREAD = (
    sa.select(*_COLUMNS)
    .where(
        runs.c.thread_id == sa.bindparam("thread_id"),
        runs.c.organization_id == sa.bindparam("organization_id"),
        among(runs.c.status, ACTIVE),
    )
    .order_by(runs.c.id)
)
# The thread's active run: the running one, else the oldest queued one.
_REFRESH_ACTIVE_RUN = (
    threads.update()
    .where(threads.c.id == sa.bindparam("thread_id"))
    .values(
        active_run_id=sa.select(runs.c.id)
        .where(runs.c.thread_id == sa.bindparam("thread_id"), among(runs.c.status, ACTIVE))
        .order_by(sa.case((among(runs.c.status, BUSY), 0), else_=1), runs.c.id)
        .limit(1)
        .scalar_subquery()
    )
)
# (An UPDATE reserves its table's column names for its SET clause: the bound organization is named apart.)
_REFRESH_ACTIVE_RUN_OF_ORGANIZATION = _REFRESH_ACTIVE_RUN.where(
    threads.c.organization_id == sa.bindparam("of_organization")
)
_ADVANCE = (
    runs.update()
    .where(
        runs.c.id == sa.bindparam("run_id"),
        runs.c.status == "running",
        runs.c.lease_owner == sa.bindparam("owner"),
    )
    .values(
        event_count=runs.c.event_count + sa.bindparam("count", type_=sa.Integer),
        input_tokens=runs.c.input_tokens + sa.bindparam("input_tokens", type_=sa.Integer),
        output_tokens=runs.c.output_tokens + sa.bindparam("output_tokens", type_=sa.Integer),
    )
    .returning(runs.c.event_count)
)


class RunsAcrossOrganizations:
    """Runs named by id alone, whichever organization holds them: the executor's leases, events and
    reaping (it serves every organization; its claims are ``runs.claim``), and the writes of a run's
    status and its thread's active run, made after the caller locked the run (through ``RunRepository``
    when a request asks) and its thread."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def get(self, run_id: str, *, for_update: bool = False) -> Run | None:
        query = _GET_FOR_UPDATE if for_update else _GET
        row = (await self._conn.execute(query, {"run_id": run_id})).mappings().first()
        return from_row(row) if row else None

    async def count_active(self) -> dict[str, int]:
        """Runs queued and running in the whole deployment, for the metrics' gauges: one count on the
        ``(status, id)`` index, which holds few active rows however many runs have ended."""
        counts = sa.select(runs.c.status, sa.func.count().label("n"))
        query = counts.where(runs.c.status.in_(ACTIVE)).group_by(runs.c.status)
        rows = (await self._conn.execute(query)).mappings().all()
        counted = {str(row["status"]): int(row["n"]) for row in rows}
        return {status: counted.get(status, 0) for status in ACTIVE}

    async def refresh_active_run(self, thread_id: str) -> None:
        """The thread's ``active_run_id`` from its runs: the running one, else the oldest queued one.

        Called in every transaction that changes a run's status, after locking the thread row, so two
        transactions never write it from different views of the runs."""
        await self._conn.execute(_REFRESH_ACTIVE_RUN, {"thread_id": thread_id})

    async def set_status(
        self,
        run_id: str,
        status: Status,
        *,
        at: datetime,
        error: tuple[str, str] | None = None,
        events: int = 0,
    ) -> None:
        """An end (``at`` is ``ended_at``) or the start (``at`` is ``started_at``); ``events`` more events."""
        values: dict[str, object] = {"status": status, "event_count": runs.c.event_count + events}
        if status == "running":
            values["started_at"] = at
        else:
            values.update(
                ended_at=at,
                lease_owner=None,
                lease_expires_at=None,
                required_action=None,
                action_expires_at=None,
            )
        if error is not None:
            values.update(error_code=error[0], error_message=error[1])
        await self._conn.execute(runs.update().where(runs.c.id == run_id).values(**values))

    async def advance(
        self, run_id: str, owner: str, count: int, input_tokens: int, output_tokens: int
    ) -> int | None:
        """Reserve ``count`` event numbers (and add usage) while ``owner`` still holds the running run; the
        new ``event_count``, or None once the run was cancelled or its lease taken over."""
        parameters = {
            "run_id": run_id,
            "owner": owner,
            "count": count,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        }
        result = await self._conn.execute(_ADVANCE, parameters)
        return result.scalar_one_or_none()

    async def renew_leases(self, owner: str, run_ids: Collection[str], until: datetime) -> set[str]:
        """Extends ``owner``'s leases on ``run_ids`` (the runs it has a live task for: a run held without one,
        its end not recorded, must lapse so that the reaper ends it); the ids it still holds."""
        result = await self._conn.execute(
            runs.update()
            .where(runs.c.id.in_(list(run_ids)), runs.c.lease_owner == owner, runs.c.status == "running")
            .values(lease_expires_at=until)
            .returning(runs.c.id)
        )
        return set(result.scalars())

    async def expired(self, now: datetime, limit: int = 100) -> list[str]:
        query = (
            sa.select(runs.c.id)
            .where(runs.c.status == "running", runs.c.lease_expires_at < now)
            .order_by(runs.c.id)
            .limit(limit)
        )
        return list((await self._conn.execute(query)).scalars())

    async def lease_lapsed(self, run_id: str, before: datetime) -> bool:
        query = sa.select(runs.c.id).where(runs.c.id == run_id, runs.c.lease_expires_at < before)
        return (await self._conn.execute(query)).first() is not None
