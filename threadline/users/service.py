"""Dashboard logins. Passwords are hashed with argon2id (memory-hard, unlike key hashes: a password is
low-entropy and must be slow to guess)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from threadline.kit.clock import utcnow
from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.users.tables import users

_hasher = PasswordHasher()  # argon2id with the library's RFC 9106 low-memory profile


@dataclass(frozen=True, slots=True)
class User:
    id: str
    organization_id: str
    email: str
    role: str
    created_at: datetime


def generate_password() -> str:
    return secrets.token_urlsafe(18)


async def create_owner(conn: Conn, organization_id: str, email: str, password: str) -> User:
    user = User(
        id=new_id("usr"),
        organization_id=organization_id,
        email=email.lower(),
        role="owner",
        created_at=utcnow(),
    )
    await conn.execute(
        users.insert().values(
            id=user.id,
            organization_id=organization_id,
            email=user.email,
            password_hash=_hasher.hash(password),
            role=user.role,
            created_at=user.created_at,
        )
    )
    return user


async def verify_login(conn: Conn, email: str, password: str) -> User | None:
    row = (await conn.execute(sa.select(users).where(users.c.email == email.lower()))).mappings().first()
    if row is None:
        _hasher.hash(password)  # same cost whether or not the email exists: no account enumeration by timing
        return None
    try:
        _hasher.verify(row["password_hash"], password)
    except (VerificationError, InvalidHashError):
        return None
    return User(
        id=row["id"],
        organization_id=row["organization_id"],
        email=row["email"],
        role=row["role"],
        created_at=row["created_at"],
    )
