from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Query, Request

from threadline.access.principal import principal_of
from threadline.keys import service
from threadline.keys.schemas import KeyCreate, KeyCreated, KeyOut
from threadline.keys.tokens import KeyType
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.kit.signals import SignalBus


class KeyServices(Protocol):
    """What the key handlers read from the process's services."""

    clock: Clock
    signals: SignalBus


ServicesDep = Annotated[KeyServices, Depends(get_services)]

router = APIRouter(prefix="/v1/keys", tags=["keys"])


@router.get(
    "", operation_id="keys.list", response_model=CursorPage[KeyOut], responses=errors(400, *AUTHENTICATED)
)
async def list_keys(
    request: Request,
    conn: ConnDep,
    page: CursorDep,
    type: Annotated[KeyType | None, Query(description="Only keys of this type.")] = None,
) -> CursorPage[KeyOut]:
    """The organization's keys, newest first, revoked ones included. Values are never shown again."""
    keys, next_cursor = await service.list_keys(conn, principal_of(request).organization_id, page, type)
    return CursorPage(data=[KeyOut.of(k) for k in keys], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="keys.create",
    status_code=201,
    response_model=KeyCreated,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def create_key(body: KeyCreate, request: Request, conn: ConnDep, services: ServicesDep) -> KeyCreated:
    """Creates a key and returns its full value in `key`, this once; only a hash is stored."""
    key, value = await service.create_key(
        conn,
        principal_of(request).organization_id,
        name=body.name,
        key_type=body.type,
        project_id=body.project_id,
        rate_limit_per_minute=body.rate_limit_per_minute,
        now=services.clock.now(),
    )
    return KeyCreated(**KeyOut.of(key).model_dump(), key=value)


@router.get("/{keyId}", operation_id="keys.get", response_model=KeyOut, responses=errors(404, *AUTHENTICATED))
async def get_key(keyId: str, request: Request, conn: ConnDep) -> KeyOut:
    return KeyOut.of(await service.get_key(conn, principal_of(request).organization_id, keyId))


@router.delete(
    "/{keyId}", operation_id="keys.revoke", response_model=KeyOut, responses=errors(404, *AUTHENTICATED)
)
async def revoke_key(
    keyId: str,
    request: Request,
    conn: ConnDep,
    services: ServicesDep,
) -> KeyOut:
    """Revokes the key (idempotent). Every process refuses it within a second; the record stays listed."""
    key = await service.revoke_key(
        conn, services.signals, principal_of(request).organization_id, keyId, now=services.clock.now()
    )
    return KeyOut.of(key)
