"""Password attempts, wherever the dashboard takes one: at sign-in, and when the password is asked again
before a secret key is made or revoked. Both draw on the same buckets (per client address and per
account), so a stolen session buys no more guesses than the sign-in form gives."""

from __future__ import annotations

import hashlib
from typing import NamedTuple, Protocol

from fastapi import Request

from threadline.config import Settings
from threadline.dashboard.sessions import Viewer
from threadline.kit.context import client_address
from threadline.kit.db import Database
from threadline.kit.ratelimit import Bucket, RateLimiter
from threadline.users.service import verify_password

# Attempts per minute: enough for a person who mistypes, far too few to guess a password.
ATTEMPTS_PER_ADDRESS = 20
ATTEMPTS_PER_ACCOUNT = 10


class AttemptServices(Protocol):
    settings: Settings
    limiter: RateLimiter


class ConfirmServices(AttemptServices, Protocol):
    db: Database


class Throttled(NamedTuple):
    """A password attempt over a limit: ``wait`` seconds before the next. ``account_only``: the client's
    address still had attempts, only the account's bucket was empty."""

    wait: int
    account_only: bool


async def attempt_wait(request: Request, services: AttemptServices, email: str) -> int | None:
    """Seconds to wait before another password attempt, or None: this one may go on (and is counted)."""
    throttled = await throttle(request, services, email)
    return None if throttled is None else throttled.wait


async def throttle(request: Request, services: AttemptServices, email: str) -> Throttled | None:
    """Whether this password attempt is over a limit (it is counted either way). The address bucket is
    drawn first, so guesses spread over many accounts still meet a limit."""
    account = hashlib.sha256(email.strip().lower().encode()).hexdigest()
    address = client_address(request.scope, services.settings.trust_forwarded_for)
    for bucket, account_only in (
        (Bucket(f"dashboard:signin:address:{address}", ATTEMPTS_PER_ADDRESS), False),
        (Bucket(f"dashboard:signin:account:{account}", ATTEMPTS_PER_ACCOUNT), True),
    ):
        decision = await services.limiter.hit((bucket,))
        if not decision.allowed:
            return Throttled(decision.retry_after, account_only)
    return None


async def password_problem(
    request: Request, services: ConfirmServices, viewer: Viewer, password: str
) -> str | None:
    """What to say at the Password field when the signed-in person's password, asked again, does not
    confirm them; None when it does."""
    if not password:
        return "Enter your password to confirm."
    wait = await attempt_wait(request, services, viewer.email)
    if wait is not None:
        return f"Too many password attempts. Try again in {wait} seconds."
    async with services.db.transaction(write=False) as conn:
        confirmed = await verify_password(conn, viewer.organization_id, viewer.user_id, password)
    return None if confirmed else "That is not your password."
