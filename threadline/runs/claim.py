"""The executor's claim of the next run to start, fairly across organizations: the statements, shaped for
PostgreSQL's planner and built once, and the recount under the organization's lock that keeps every
organization within its run concurrency however many executors claim at once."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.organizations.tables import organizations
from threadline.runs.repository import _COLUMNS, ACTIVE, BUSY, Run, among, from_row
from threadline.runs.tables import runs

# A queued run, or one that was answered after waiting for its caller: running again, held by no executor
# (``resume``), to be continued from its ``agent_state`` by whichever executor claims it.
_CLAIMABLE = sa.or_(
    runs.c.status == "queued", sa.and_(runs.c.status == "running", runs.c.lease_owner.is_(None))
)


def _candidate(*, passing: bool) -> sa.Select[str, str]:
    """The claimable queued run (see ``RunsAcrossOrganizations.claim_next``) and its organization, locked,
    skipping runs another claimer holds and, with ``passing``, the organizations bound as ``passed``.

    Shaped for PostgreSQL's planner, as the fair order forbids stopping at the first claimable run: the
    organizations at their cap are left out while queued runs are read (a hashed ``NOT IN``), before the
    thread check, and that check reads only active runs, never the table's history.

    Built once at import, its values bound per call (``default_concurrency``, ``passed``): building it per
    claim (two aliases of ``runs``, a subquery, a join) cost more CPU than running it, on the event loop,
    between a run's creation and its ``run_started`` (profile of 2026-11-26, bench/HISTORY.md)."""
    other = runs.alias("other")
    blocked = (
        sa.select(other.c.id)
        .where(
            other.c.thread_id == runs.c.thread_id,
            other.c.id != runs.c.id,
            among(other.c.status, ACTIVE),
            sa.or_(among(other.c.status, BUSY), other.c.id < runs.c.id),
        )
        .exists()
    )
    # Running runs are few (at most the executors' slots), so counting them all is cheap.
    live = runs.alias("live")
    running = (
        sa.select(live.c.organization_id, sa.func.count().label("n"))
        .where(live.c.status == "running", live.c.lease_owner.is_not(None))
        .group_by(live.c.organization_id)
        .subquery("running")
    )
    full = (
        sa.select(running.c.organization_id)
        .join(organizations, organizations.c.id == running.c.organization_id)
        .where(running.c.n >= sa.func.coalesce(organizations.c.run_concurrency, _DEFAULT_CONCURRENCY))
    )
    count = sa.func.coalesce(running.c.n, 0)
    query = (
        sa.select(runs.c.id, runs.c.organization_id)
        .outerjoin(running, running.c.organization_id == runs.c.organization_id)
        .where(_CLAIMABLE, runs.c.organization_id.not_in(full), ~blocked)
        .order_by(count, runs.c.id)
        .limit(1)
        .with_for_update(of=runs, skip_locked=True)
    )
    if passing:
        query = query.where(runs.c.organization_id.not_in(sa.bindparam("passed", expanding=True)))
    return query


_DEFAULT_CONCURRENCY = sa.bindparam("default_concurrency", type_=sa.Integer)
_CANDIDATE = _candidate(passing=False)
_CANDIDATE_PASSING = _candidate(passing=True)
# The organization's cap, its row locked (see ``claim_next``), then its running runs counted.
_LIMIT = (
    sa.select(sa.func.coalesce(organizations.c.run_concurrency, _DEFAULT_CONCURRENCY))
    .where(organizations.c.id == sa.bindparam("organization_id"))
    .with_for_update(key_share=True, skip_locked=True)
)
_RUNNING = sa.select(sa.func.count()).where(
    runs.c.organization_id == sa.bindparam("organization_id"),
    runs.c.status == "running",
    runs.c.lease_owner.is_not(None),
)
# One UPDATE, numbering the run_started event too: on PostgreSQL a second UPDATE of a row this transaction
# already updated re-checks its foreign keys, share-locking the thread's row while holding the run's, the
# reverse of a cancel's order (measured: a deadlock with interrupt). It returns the run, so no read follows.
# A run resumed after waiting for its caller (``running``, no lease owner) keeps its start and announces no
# second ``run_started``.
_FRESH = runs.c.status == "queued"
_START = (
    runs.update()
    .where(runs.c.id == sa.bindparam("run_id"))
    .values(
        status="running",
        started_at=sa.case(
            (_FRESH, sa.bindparam("started_at", type_=runs.c.started_at.type)), else_=runs.c.started_at
        ),
        lease_owner=sa.bindparam("lease_owner", type_=runs.c.lease_owner.type),
        lease_expires_at=sa.bindparam("lease_expires_at", type_=runs.c.lease_expires_at.type),
        event_count=runs.c.event_count + sa.case((_FRESH, 1), else_=0),
    )
    .returning(*_COLUMNS)
)


class ClaimsAcrossOrganizations:
    """Claims of queued runs, whichever organization holds them (the executor serves them all)."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def claim_next(
        self, owner: str, now: datetime, lease_until: datetime, default_concurrency: int
    ) -> Run | None:
        """The next run to start, marked as held by ``owner``, with one event number taken (its
        ``run_started``); None when no queued run may start.

        A queued run may start when its thread has no running run and no older queued run, and its
        organization has fewer runs running (in every process) than its ``run_concurrency`` (NULL:
        ``default_concurrency``). Among those, the organization with the fewest running runs goes first,
        then the oldest run: when slots are scarce, an organization that has none gets the next one
        whatever another has queued.

        The per-organization cap must hold with several workers claiming at once, each in its own
        transaction under READ COMMITTED: two claimers both counting 3 of 4 would both start a fourth.
        So the count that decides is taken again after locking the organization's row (``FOR NO KEY
        UPDATE``, which run inserts' foreign-key share locks do not conflict with), by a statement whose
        snapshot follows the lock: every claimer of the organization holds that lock until it commits,
        so the recount sees every claim committed before and none can slip in after. The lock is taken
        with ``SKIP LOCKED``, like the run's own: a claimer never waits for another (two claimers each
        holding one organization and wanting the other's cannot deadlock); it tries the next
        organization, and the one holding the lock goes on claiming that organization's runs. Rows were
        chosen from the statement's snapshot, so an organization found full (or busy) on the recount is
        set aside and the choice made again. On SQLite the write transaction already runs alone, so the
        locks are not needed (SQLAlchemy leaves them out) and the first choice always stands."""
        passed: set[str] = set()
        while True:
            bound: dict[str, object] = {"default_concurrency": default_concurrency}
            if passed:
                bound["passed"] = sorted(passed)
            result = await self._conn.execute(_CANDIDATE_PASSING if passed else _CANDIDATE, bound)
            picked = result.mappings().first()
            if picked is None:
                return None
            run_id, organization_id = picked["id"], picked["organization_id"]
            if await self._has_room(organization_id, default_concurrency):
                break
            passed.add(organization_id)
        start = {"run_id": run_id, "started_at": now, "lease_owner": owner, "lease_expires_at": lease_until}
        return from_row((await self._conn.execute(_START, start)).mappings().one())

    async def _has_room(self, organization_id: str, default_concurrency: int) -> bool:
        """Whether the organization may start one more run, counted under its row's lock (see
        ``claim_next``); False also when another claimer holds that lock."""
        bound = {"organization_id": organization_id, "default_concurrency": default_concurrency}
        limit: int | None = (await self._conn.execute(_LIMIT, bound)).scalar_one_or_none()
        if limit is None:
            return False
        return int((await self._conn.execute(_RUNNING, bound)).scalar_one()) < limit
