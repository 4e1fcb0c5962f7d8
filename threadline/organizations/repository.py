"""Organization rows. Only operator paths (CLI, authentication) reach across organizations."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from threadline.access.caller import Limits as Limits
from threadline.access.caller import Organization as Organization
from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.organizations.tables import organizations


def columns(prefix: str = "") -> list[sa.Label[object]]:
    """The organization's columns for a join, labelled so ``from_row`` can read them back."""
    return [column.label(prefix + column.key) for column in organizations.c]


def from_row(row: sa.RowMapping, prefix: str = "") -> Organization:
    origins = row[prefix + "allowed_origins"]
    return Organization(
        id=row[prefix + "id"],
        name=row[prefix + "name"],
        rate_limit_per_minute=row[prefix + "rate_limit_per_minute"],
        created_at=row[prefix + "created_at"],
        default_model=row[prefix + "default_model"],
        instructions=row[prefix + "instructions"],
        log_retention_days=row[prefix + "log_retention_days"],
        allowed_origins=None if origins is None else tuple(origins),
        billing_enforced=bool(row[prefix + "billing_enforced"]),
        run_concurrency=row[prefix + "run_concurrency"],
        stream_limit=row[prefix + "stream_limit"],
        automation_limit=row[prefix + "automation_limit"],
        queued_run_limit=row[prefix + "queued_run_limit"],
    )


class OrganizationRepository:
    """Organization rows by id. Not bound to an organization as the other domains' repositories are: the
    organization is the tenant itself, so its callers are the ones that find or make tenants (the
    operator's CLI, authentication, an automation's firing) or a request naming its own organization."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def insert(self, name: str, now: datetime) -> Organization:
        org = Organization(id=new_id("org"), name=name, rate_limit_per_minute=None, created_at=now)
        await self._conn.execute(
            organizations.insert().values(
                id=org.id, name=name, created_at=now, updated_at=now, billing_enforced=False
            )
        )
        return org

    async def update(self, organization_id: str, values: dict[str, object], now: datetime) -> bool:
        result = await self._conn.execute(
            organizations.update()
            .where(organizations.c.id == organization_id)
            .values(**values, updated_at=now)
        )
        return result.rowcount == 1

    async def get(self, organization_id: str, *, lock: bool = False) -> Organization | None:
        """``lock``: row-locked until the transaction ends (PostgreSQL; SQLite's writer holds the database),
        so counts checked against its limits (automations held, runs queued) cannot be passed by two
        writers at once. ``FOR NO KEY UPDATE``: rows that reference the organization (its threads, runs,
        logs) are still inserted meanwhile; ``FOR UPDATE`` would make every such insert wait."""
        query = sa.select(organizations).where(organizations.c.id == organization_id)
        if lock:
            query = query.with_for_update(key_share=True)
        row = (await self._conn.execute(query)).mappings().first()
        return from_row(row) if row else None

    async def count(self) -> int:
        query = sa.select(sa.func.count()).select_from(organizations)
        return int((await self._conn.execute(query)).scalar_one())
