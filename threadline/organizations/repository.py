"""Organization rows. Only operator paths (CLI, authentication) reach across organizations."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from threadline.kit.clock import utcnow
from threadline.kit.ids import new_id
from threadline.organizations.tables import organizations


@dataclass(frozen=True, slots=True)
class Organization:
    id: str
    name: str
    rate_limit_per_minute: int | None
    created_at: datetime


def _from_row(row: sa.RowMapping) -> Organization:
    return Organization(
        id=row["id"],
        name=row["name"],
        rate_limit_per_minute=row["rate_limit_per_minute"],
        created_at=row["created_at"],
    )


async def insert(conn: AsyncConnection, name: str) -> Organization:
    now = utcnow()
    org = Organization(id=new_id("org"), name=name, rate_limit_per_minute=None, created_at=now)
    await conn.execute(organizations.insert().values(id=org.id, name=name, created_at=now, updated_at=now))
    return org


async def get(conn: AsyncConnection, organization_id: str) -> Organization | None:
    row = (
        (await conn.execute(sa.select(organizations).where(organizations.c.id == organization_id)))
        .mappings()
        .first()
    )
    return _from_row(row) if row else None


async def set_rate_limit(conn: AsyncConnection, organization_id: str, per_minute: int | None) -> bool:
    result = await conn.execute(
        organizations.update()
        .where(organizations.c.id == organization_id)
        .values(rate_limit_per_minute=per_minute, updated_at=utcnow())
    )
    return result.rowcount == 1


async def count(conn: AsyncConnection) -> int:
    return int((await conn.execute(sa.select(sa.func.count()).select_from(organizations))).scalar_one())
