"""Dashboard logins. Passwords are hashed with argon2id (memory-hard, unlike key hashes: a password is
low-entropy and must be slow to guess). An email names one login across every organization: signing in
finds the organization from it.

Every process hashes with ``PRODUCTION_HASHER`` (RFC 9106's low-memory profile: about 0.1 s of CPU a hash,
and as much a check, on a quiet machine) unless it calls ``use_hasher``, which only the tests' own process
does (tests/conftest.py), where every signed-in test paid a hash and a check. No setting reaches it, and a
hash records its own parameters, so a hash made either way verifies in any process. Verification never
rehashes: a hash keeps the cost it was made with until the password is set again."""

from __future__ import annotations

import re
import secrets
from datetime import datetime

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

from threadline.kit.db import Conn
from threadline.kit.errors import BadRequest, Conflict, NotFound
from threadline.kit.ids import new_id
from threadline.organizations.repository import OrganizationRepository
from threadline.users.repository import User, UserRepository, UsersAcrossOrganizations

PRODUCTION_HASHER = PasswordHasher.from_parameters(profiles.RFC_9106_LOW_MEMORY)  # argon2id
_hasher = PRODUCTION_HASHER
# One "@" between two non-empty parts, no spaces or control characters: deliverability is the operator's
# business (``owner@localhost`` is a fine login), but a typo such as a missing "@" is caught here.
_EMAIL = re.compile(r"[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+")
MAX_EMAIL_LENGTH = 320


def use_hasher(hasher: PasswordHasher) -> PasswordHasher:
    """Hashes and verifies with ``hasher`` in this process from now on; returns the hasher it replaces.
    For tests only (see the module docstring): nothing in the product calls it."""
    global _hasher
    replaced, _hasher = _hasher, hasher
    return replaced


def generate_password() -> str:
    return secrets.token_urlsafe(18)


def normalize_email(email: str) -> str:
    """The email as logins store and look it up: trimmed and lower-cased; refused when it is not one."""
    email = email.strip().lower()
    if len(email) > MAX_EMAIL_LENGTH or not _EMAIL.fullmatch(email):
        raise BadRequest(
            f"{email!r} is not an email address (name@domain, at most {MAX_EMAIL_LENGTH} characters)"
        )
    return email


async def create_user(
    conn: Conn, organization_id: str, email: str, password: str, role: str = "member", *, now: datetime
) -> User:
    """A login of the organization. Emails are unique across organizations, so the same person needs a
    second address to belong to a second organization."""
    email = normalize_email(email)
    if await OrganizationRepository(conn).get(organization_id) is None:
        raise NotFound(f"organization {organization_id} was not found")
    if await UsersAcrossOrganizations(conn).find_by_email(email) is not None:
        raise Conflict(f"{email} already has a login (emails are unique across organizations)")
    user = User(id=new_id("usr"), organization_id=organization_id, email=email, role=role, created_at=now)
    await UserRepository(conn, organization_id).insert(user, _hasher.hash(password))
    return user


async def create_owner(conn: Conn, organization_id: str, email: str, password: str, *, now: datetime) -> User:
    return await create_user(conn, organization_id, email, password, role="owner", now=now)


async def set_password(conn: Conn, email: str, password: str) -> User:
    """Replaces the login's password. Its open dashboard sessions are the caller's to end in the same
    transaction (``dashboard.sessions.end_sessions_of_user``): this domain does not know about sessions."""
    found = await UsersAcrossOrganizations(conn).find_by_email(normalize_email(email))
    if found is None:
        raise NotFound(f"there is no login with the email {email.strip().lower()}")
    user, _old = found
    await UserRepository(conn, user.organization_id).set_password_hash(user.id, _hasher.hash(password))
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
