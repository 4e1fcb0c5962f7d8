"""Key rules: who may hold which key type, and what revocation must reach."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from threadline.access.principal import KEY_REVOKED
from threadline.keys.repository import ApiKey, KeyRepository
from threadline.keys.tokens import KeyType, generate_key, hash_key
from threadline.kit.db import Conn, after_commit
from threadline.kit.errors import BadRequest, NotFound
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams
from threadline.kit.signals import SignalBus
from threadline.projects.repository import ProjectRepository


async def create_key(
    conn: Conn,
    organization_id: str,
    *,
    name: str,
    key_type: KeyType,
    project_id: str | None = None,
    rate_limit_per_minute: int | None = None,
    now: datetime,
) -> tuple[ApiKey, str]:
    """Returns the record and the full value; the value exists nowhere else after this returns."""
    if key_type == "public":
        if project_id is None:
            raise BadRequest(
                "A public key belongs to one project: give projectId.", missing_context=["projectId"]
            )
        if await ProjectRepository(conn, organization_id).get(project_id) is None:
            raise NotFound(f"Project {project_id} was not found.")
    elif project_id is not None:
        raise BadRequest("A secret key covers the whole organization; projectId is only for public keys.")
    value = generate_key(key_type)
    key = ApiKey(
        id=new_id("key"),
        organization_id=organization_id,
        project_id=project_id,
        name=name,
        type=key_type,
        last4=value[-4:],
        rate_limit_per_minute=rate_limit_per_minute,
        created_at=now,
        last_used_at=None,
        revoked_at=None,
    )
    await KeyRepository(conn, organization_id).insert(key, hash_key(value))
    return key, value


async def get_key(conn: Conn, organization_id: str, key_id: str) -> ApiKey:
    key = await KeyRepository(conn, organization_id).get(key_id)
    if key is None:
        raise NotFound(f"Key {key_id} was not found.")
    return key


async def list_keys(
    conn: Conn, organization_id: str, params: CursorParams, key_type: KeyType | None
) -> tuple[Sequence[ApiKey], str | None]:
    return await KeyRepository(conn, organization_id).page(params, key_type)


async def revoke_key(
    conn: Conn, signals: SignalBus, organization_id: str, key_id: str, *, now: datetime
) -> ApiKey:
    """Idempotent: revoking a revoked key returns it unchanged. Every process hears of it after commit."""
    keys = KeyRepository(conn, organization_id)
    key = await get_key(conn, organization_id, key_id)
    if key.revoked_at is None:
        await keys.revoke(key_id, now)
        digest = await keys.get_hash(key_id)
        assert digest is not None

        async def announce() -> None:
            await signals.publish(KEY_REVOKED, digest)

        after_commit(conn, announce)
        key = await get_key(conn, organization_id, key_id)
    return key
