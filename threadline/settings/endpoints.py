from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.signals import SignalBus
from threadline.settings import service
from threadline.settings.schemas import SettingsOut, SettingsUpdate


class SettingsServices(Protocol):
    """What the settings handlers read from the process's services."""

    clock: Clock
    settings: Settings
    signals: SignalBus


ServicesDep = Annotated[SettingsServices, Depends(get_services)]

router = APIRouter(prefix="/v1/settings", tags=["settings"])


@router.get("", operation_id="settings.get", response_model=SettingsOut, responses=errors(*AUTHENTICATED))
async def get_settings(request: Request, conn: ConnDep, services: ServicesDep) -> SettingsOut:
    return await service.get_settings(conn, services.settings, principal_of(request).organization_id)


@router.patch(
    "",
    operation_id="settings.update",
    response_model=SettingsOut,
    responses=errors(400, 413, *AUTHENTICATED),
)
async def update_settings(
    body: SettingsUpdate, request: Request, conn: ConnDep, services: ServicesDep
) -> SettingsOut:
    """Replaces the fields sent; every server process uses the new values from its next request on."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    return await service.update_settings(
        conn,
        services.settings,
        services.signals,
        principal_of(request).organization_id,
        changes,
        services.clock.now(),
    )
