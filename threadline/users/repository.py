"""Login rows. Creating one is scoped to its organization (``UserRepository``); a login looks an email up
across organizations (``UsersAcrossOrganizations``): the email is how its organization is found."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from threadline.kit.db import Conn
from threadline.users.tables import users


@dataclass(frozen=True, slots=True)
class User:
    id: str
    organization_id: str
    email: str
    role: str
    created_at: datetime


class UserRepository:
    """The logins of one organization."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    async def password_hash(self, user_id: str) -> str | None:
        query = sa.select(users.c.password_hash).where(
            users.c.id == user_id, users.c.organization_id == self._organization_id
        )
        return (await self._conn.execute(query)).scalar_one_or_none()

    async def insert(self, user: User, password_hash: str) -> None:
        await self._conn.execute(
            users.insert().values(
                id=user.id,
                organization_id=self._organization_id,
                email=user.email,
                password_hash=password_hash,
                role=user.role,
                created_at=user.created_at,
            )
        )

    async def set_password_hash(self, user_id: str, password_hash: str) -> bool:
        result = await self._conn.execute(
            users.update()
            .where(users.c.organization_id == self._organization_id, users.c.id == user_id)
            .values(password_hash=password_hash)
        )
        return bool(result.rowcount)


class UsersAcrossOrganizations:
    """Logins found by email alone, whichever organization holds them."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def find_by_email(self, email: str) -> tuple[User, str] | None:
        """The login with ``email`` (already lower-cased) and its password hash."""
        row = (await self._conn.execute(sa.select(users).where(users.c.email == email))).mappings().first()
        if row is None:
            return None
        user = User(
            id=row["id"],
            organization_id=row["organization_id"],
            email=row["email"],
            role=row["role"],
            created_at=row["created_at"],
        )
        return user, row["password_hash"]
