"""Dashboard logins. Passwords are hashed with argon2id (memory-hard, unlike key hashes: a password is
low-entropy and must be slow to guess)."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from threadline.kit.clock import utcnow
from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.users.repository import User, UserRepository, UsersAcrossOrganizations

_hasher = PasswordHasher()  # argon2id with the library's RFC 9106 low-memory profile


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
    await UserRepository(conn, organization_id).insert(user, _hasher.hash(password))
    return user


async def verify_login(conn: Conn, email: str, password: str) -> User | None:
    found = await UsersAcrossOrganizations(conn).find_by_email(email.lower())
    if found is None:
        _hasher.hash(password)  # same cost whether or not the email exists: no account enumeration by timing
        return None
    user, password_hash = found
    try:
        _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    return user


async def verify_password(conn: Conn, organization_id: str, user_id: str, password: str) -> bool:
    """The signed-in person's password asked again before a sensitive change (a secret key made or
    revoked): a stolen session alone must not be enough."""
    password_hash = await UserRepository(conn, organization_id).password_hash(user_id)
    if password_hash is None:
        _hasher.hash(password)  # the same cost as a real check
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False
