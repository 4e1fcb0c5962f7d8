"""API key queries. Every query is scoped to one organization (``KeyRepository``), except the
authenticator's (``KeysAcrossOrganizations``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import sqlalchemy as sa

from threadline.access.caller import ApiKey as ApiKey
from threadline.access.caller import KeyType
from threadline.keys.tables import api_keys
from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page
from threadline.organizations import repository as org_repository
from threadline.organizations.repository import Organization
from threadline.organizations.tables import organizations

_KEY_COLUMNS = [c for c in api_keys.c if c.key != "key_hash"]


def _from_row(row: sa.RowMapping) -> ApiKey:
    return ApiKey(**{c.key: row[c.key] for c in _KEY_COLUMNS})


class KeysAcrossOrganizations:
    """Keys found without knowing their organization: a credential is how an organization is discovered
    in the first place, and the authenticator records the use of every organization's keys at once."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def find_by_hash(self, key_hash: str) -> tuple[ApiKey, Organization] | None:
        query = (
            sa.select(*_KEY_COLUMNS, *org_repository.columns("org_"))
            .join(organizations, organizations.c.id == api_keys.c.organization_id)
            .where(api_keys.c.key_hash == key_hash)
        )
        row = (await self._conn.execute(query)).mappings().first()
        if row is None:
            return None
        return _from_row(row), org_repository.from_row(row, "org_")

    async def record_usage(self, used: Mapping[str, datetime]) -> None:
        if not used:
            return
        statement = (
            api_keys.update()
            .where(
                api_keys.c.id == sa.bindparam("key_id"),
                sa.or_(api_keys.c.last_used_at.is_(None), api_keys.c.last_used_at < sa.bindparam("used_at")),
            )
            .values(last_used_at=sa.bindparam("used_at"))
        )
        await self._conn.execute(statement, [{"key_id": k, "used_at": t} for k, t in sorted(used.items())])


class KeyRepository:
    """The keys of one organization."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def insert(self, key: ApiKey, key_hash: str) -> None:
        values = {c.key: getattr(key, c.key) for c in _KEY_COLUMNS}
        values["organization_id"] = self._organization_id
        await self._conn.execute(api_keys.insert().values(**values, key_hash=key_hash))

    def _scoped(self) -> sa.Select[tuple[object, ...]]:
        return sa.select(*_KEY_COLUMNS).where(api_keys.c.organization_id == self._organization_id)

    async def get(self, key_id: str) -> ApiKey | None:
        row = (await self._conn.execute(self._scoped().where(api_keys.c.id == key_id))).mappings().first()
        return _from_row(row) if row else None

    async def get_hash(self, key_id: str) -> str | None:
        query = sa.select(api_keys.c.key_hash).where(
            api_keys.c.id == key_id, api_keys.c.organization_id == self._organization_id
        )
        return (await self._conn.execute(query)).scalar_one_or_none()

    async def page(
        self, params: CursorParams, key_type: KeyType | None = None
    ) -> tuple[Sequence[ApiKey], str | None]:
        query = self._scoped()
        if key_type is not None:
            query = query.where(api_keys.c.type == key_type)
        rows, next_cursor = await fetch_cursor_page(self._conn, query, api_keys.c.id, params)
        return [_from_row(row._mapping) for row in rows], next_cursor

    async def revoke(self, key_id: str, at: datetime) -> None:
        await self._conn.execute(
            api_keys.update()
            .where(
                api_keys.c.id == key_id,
                api_keys.c.organization_id == self._organization_id,
                api_keys.c.revoked_at.is_(None),
            )
            .values(revoked_at=at)
        )
