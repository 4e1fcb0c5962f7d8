"""Server-side sessions (OWASP's session cheat sheet): the browser holds a 256-bit random id, the table
only its SHA-256. A session ends after ``dashboard_idle_minutes`` without a request, after
``dashboard_absolute_hours`` in all, at sign-out, and when its user's password changes."""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from threadline.config import Settings
from threadline.dashboard.tables import dashboard_sessions
from threadline.kit.clock import Clock
from threadline.kit.db import Conn, Database
from threadline.users.tables import users

log = logging.getLogger(__name__)

# last_seen_at is written at most this often: a page load is a read, not a write, most of the time.
_TOUCH_EVERY = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in person behind a dashboard request."""

    user_id: str
    email: str
    organization_id: str
    csrf_token: str
    session_hash: str


@dataclass(frozen=True, slots=True)
class Lifetimes:
    idle: timedelta
    absolute: timedelta


def lifetimes(settings: Settings) -> Lifetimes:
    return Lifetimes(
        idle=timedelta(minutes=settings.dashboard_idle_minutes),
        absolute=timedelta(hours=settings.dashboard_absolute_hours),
    )


def hash_session_id(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


async def open_session(conn: Conn, user_id: str, organization_id: str, now: datetime) -> tuple[str, str]:
    """A new session for the user: returns the raw id (for the cookie, never stored) and its CSRF token."""
    raw = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    await conn.execute(
        dashboard_sessions.insert().values(
            id_hash=hash_session_id(raw),
            user_id=user_id,
            organization_id=organization_id,
            csrf_token=csrf,
            created_at=now,
            last_seen_at=now,
        )
    )
    return raw, csrf


async def find_session(
    conn: Conn, raw: str, now: datetime, lifetimes: Lifetimes
) -> tuple[Viewer, bool] | None:
    """The live session with this raw id and whether its last_seen_at is due a write (``touch_session``);
    None when there is none or it has expired (an expired row is left for ``end_session`` or the sweep)."""
    id_hash = hash_session_id(raw)
    row = (
        (
            await conn.execute(
                sa.select(
                    dashboard_sessions.c.user_id,
                    dashboard_sessions.c.organization_id,
                    dashboard_sessions.c.csrf_token,
                    dashboard_sessions.c.created_at,
                    dashboard_sessions.c.last_seen_at,
                    users.c.email,
                )
                .join(users, users.c.id == dashboard_sessions.c.user_id)
                .where(dashboard_sessions.c.id_hash == id_hash)
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    if now - row["created_at"] >= lifetimes.absolute or now - row["last_seen_at"] >= lifetimes.idle:
        return None
    viewer = Viewer(
        user_id=row["user_id"],
        email=row["email"],
        organization_id=row["organization_id"],
        csrf_token=row["csrf_token"],
        session_hash=id_hash,
    )
    return viewer, now - row["last_seen_at"] >= _TOUCH_EVERY


async def touch_session(conn: Conn, session_hash: str, now: datetime) -> None:
    await conn.execute(
        dashboard_sessions.update()
        .where(dashboard_sessions.c.id_hash == session_hash)
        .values(last_seen_at=now)
    )


async def end_session(conn: Conn, raw: str) -> None:
    await conn.execute(
        dashboard_sessions.delete().where(dashboard_sessions.c.id_hash == hash_session_id(raw))
    )


async def end_sessions_of_user(conn: Conn, user_id: str) -> int:
    """Every session of the user (a password change): returns how many ended."""
    result = await conn.execute(dashboard_sessions.delete().where(dashboard_sessions.c.user_id == user_id))
    return result.rowcount or 0


async def sweep_expired(conn: Conn, now: datetime, lifetimes: Lifetimes) -> int:
    """Deletes sessions past either timeout (housekeeping): expired rows open nothing, this keeps the
    table small."""
    result = await conn.execute(
        dashboard_sessions.delete().where(
            sa.or_(
                dashboard_sessions.c.created_at <= now - lifetimes.absolute,
                dashboard_sessions.c.last_seen_at <= now - lifetimes.idle,
            )
        )
    )
    return result.rowcount or 0


class SessionSweeper:
    """The housekeeping chore's sweep of expired sessions (``threadline.chores``): an expired row opens
    nothing already, so this only keeps the table to the sessions that are live."""

    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self._db = db
        self._clock = clock
        self._lifetimes = lifetimes(settings)

    async def run_once(self) -> int:
        async with self._db.transaction() as conn:
            swept = await sweep_expired(conn, self._clock.now(), self._lifetimes)
        if swept:
            log.info("dashboard sessions: swept %d expired", swept)
        return swept
