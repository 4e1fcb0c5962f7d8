"""Stream tokens: what lets an end user's browser read one run's or thread's stream without a secret key.

A browser's ``EventSource`` cannot send headers, and a secret key must never reach a browser, so the
customer's server mints a short-lived token with its secret key and hands it to the page, which puts it in
the stream's URL (``?token=st_…``). The token is shown once and stored only as its SHA-256 (like a key, it
carries 238 random bits: nothing to slow a guesser down for). It names the key that minted it: that key's
revocation refuses the token as fast as it refuses the key, and its requests draw from that key's and its
organization's rate limits. Expiry is checked when a stream opens; a stream opened in time runs to its
``[DONE]``. Tokens are listed nowhere; expired rows are deleted as the organization mints new ones.
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from threadline.access.caller import DEFAULT_ALLOWED_ORIGINS
from threadline.keys.tables import api_keys, stream_tokens
from threadline.keys.tokens import hash_key
from threadline.kit.db import Conn, stored_json
from threadline.kit.errors import BadRequest, Reason
from threadline.organizations.repository import Organization

PREFIX = "st_"
DEFAULT_TTL_SECONDS = 600
MAX_TTL_SECONDS = 3600
_ALPHABET = string.ascii_letters + string.digits
_BODY_LENGTH = 40
_SHAPE = re.compile(rb"^st_[A-Za-z0-9]{32,128}$")


@dataclass(frozen=True, slots=True)
class StreamToken:
    """A token as the stream endpoints check it; ``key_hash`` finds the minting key's principal."""

    organization_id: str
    key_id: str
    key_hash: str
    run_id: str | None
    thread_id: str | None
    origins: tuple[str, ...]
    expires_at: datetime

    def allows_origin(self, origin: str) -> bool:
        return "*" in self.origins or origin.lower() in self.origins


def looks_like_token(value: bytes) -> bool:
    """Cheap shape check, so garbage never costs a database lookup."""
    return _SHAPE.match(value) is not None


def token_origins(organization: Organization, requested: list[str] | None) -> tuple[str, ...]:
    """The origins a new token allows: the organization's list, or those asked for if it allows each."""
    allowed = organization.allowed_origins or DEFAULT_ALLOWED_ORIGINS
    if requested is None:
        return tuple(origin.lower() for origin in allowed)
    permitted = {origin.lower() for origin in allowed}
    for index, origin in enumerate(requested):
        if "*" not in permitted and origin.lower() not in permitted:
            raise BadRequest(
                f"origins[{index}]: {origin} is not in this organization's allowedOrigins "
                f"({', '.join(allowed)}); add it with PATCH /v1/settings first.",
                reason=Reason.ORIGIN_NOT_ALLOWED,
                missing_context=[f"origins[{index}]"],
            )
    return tuple(dict.fromkeys(origin.lower() for origin in requested))


async def mint(
    conn: Conn,
    now: datetime,
    organization: Organization,
    key_id: str,
    *,
    run_id: str | None = None,
    thread_id: str | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    origins: list[str] | None = None,
) -> tuple[str, datetime]:
    """A new token for one run or one thread (the caller has checked it exists) and when it expires
    (``now``: the services' clock, which the token's check reads too)."""
    allowed = token_origins(organization, origins)
    value = PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(_BODY_LENGTH))
    expires_at = now + timedelta(seconds=ttl_seconds)
    await conn.execute(
        stream_tokens.delete().where(
            stream_tokens.c.organization_id == organization.id, stream_tokens.c.expires_at < now
        )
    )
    await conn.execute(
        stream_tokens.insert().values(
            token_hash=hash_key(value),
            organization_id=organization.id,
            key_id=key_id,
            run_id=run_id,
            thread_id=thread_id,
            origins=list(allowed),
            created_at=now,
            expires_at=expires_at,
        )
    )
    return value, expires_at


_FIND = (
    sa.select(
        stream_tokens.c.organization_id,
        stream_tokens.c.key_id,
        api_keys.c.key_hash,
        stream_tokens.c.run_id,
        stream_tokens.c.thread_id,
        stream_tokens.c.origins,
        stream_tokens.c.expires_at,
    )
    .join(api_keys, api_keys.c.id == stream_tokens.c.key_id)
    .where(stream_tokens.c.token_hash == sa.bindparam("token_hash"))
)


async def find(conn: Conn, value: bytes) -> StreamToken | None:
    """The token with this value, expired or not (the caller says which refusal applies), or None."""
    if not looks_like_token(value):
        return None
    row = (await conn.execute(_FIND, {"token_hash": hash_key(value)})).mappings().first()
    if row is None:
        return None
    return StreamToken(
        organization_id=row["organization_id"],
        key_id=row["key_id"],
        key_hash=row["key_hash"],
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        origins=tuple(stored_json(row["origins"])),
        expires_at=row["expires_at"],
    )
