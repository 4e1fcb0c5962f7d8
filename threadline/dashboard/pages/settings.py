"""``/settings``: the organization's settings, changed through ``settings.service`` and checked by the
API's ``SettingsUpdate``, exactly as ``PATCH /v1/settings`` does; so a value the API refuses is refused
here too, with the same message, at its field."""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from threadline.config import Settings
from threadline.dashboard.forms import FieldErrors, error_of, validate
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.errors import BadRequest
from threadline.kit.signals import SignalBus
from threadline.settings import service
from threadline.settings.schemas import SettingsUpdate

_FIELDS = {
    "defaultModel": "default_model",
    "instructions": "instructions",
    "logRetentionDays": "log_retention_days",
    "allowedOrigins": "allowed_origins",
    "billingEnforced": "billing_enforced",
}
_TEXT = Form(max_length=100_000)


class SettingsPageServices(Protocol):
    clock: Clock
    settings: Settings
    db: Database
    signals: SignalBus


ServicesDep = Annotated[SettingsPageServices, Depends(get_services)]

router = APIRouter()


@router.get("/settings")
async def settings_page(
    request: Request, viewer: ViewerDep, conn: ConnDep, services: ServicesDep, saved: bool = False
) -> Response:
    current = await service.get_settings(conn, services.settings, viewer.organization_id)
    values = {
        "default_model": current.default_model,
        "instructions": current.instructions or "",
        "log_retention_days": str(current.log_retention_days),
        "allowed_origins": "\n".join(current.allowed_origins),
        "billing_enforced": current.billing_enforced,
    }
    return render(
        request, "settings/index.html", viewer, values=values, errors={}, current=current, saved=saved
    )


@router.post("/settings")
async def save_settings(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    default_model: Annotated[str, _TEXT] = "",
    instructions: Annotated[str, _TEXT] = "",
    log_retention_days: Annotated[str, Form(max_length=100)] = "",
    allowed_origins: Annotated[str, _TEXT] = "",
    billing_enforced: Annotated[str | None, Form(max_length=10)] = None,
) -> Response:
    """Every field is sent, so every field is replaced: empty instructions clear them, an unticked box
    turns enforcement off."""
    values = {
        "default_model": default_model,
        "instructions": instructions,
        "log_retention_days": log_retention_days,
        "allowed_origins": allowed_origins,
        "billing_enforced": billing_enforced is not None,
    }
    errors: FieldErrors = {}
    body: dict[str, Any] = {
        "defaultModel": default_model.strip(),
        "instructions": instructions.replace("\r\n", "\n") or None,
        "allowedOrigins": [line.strip() for line in allowed_origins.splitlines() if line.strip()],
        "billingEnforced": billing_enforced is not None,
    }
    try:
        body["logRetentionDays"] = int(log_retention_days.strip())
    except ValueError:
        errors["log_retention_days"] = "Enter a whole number of days."
    checked = validate(SettingsUpdate, body, _FIELDS)
    if isinstance(checked, dict):
        errors = {**checked, **errors}
    if not errors and not isinstance(checked, dict):
        changes = {name: getattr(checked, name) for name in checked.model_fields_set}
        try:
            async with services.db.transaction(write=True) as conn:
                await service.update_settings(
                    conn,
                    services.settings,
                    services.signals,
                    viewer.organization_id,
                    changes,
                    services.clock.now(),
                )
        except BadRequest as exc:
            errors[""] = error_of(exc)
        else:
            return RedirectResponse("/settings?saved=true", status_code=303)
    async with services.db.transaction(write=False) as conn:
        current = await service.get_settings(conn, services.settings, viewer.organization_id)
    return render(
        request,
        "settings/index.html",
        viewer,
        status_code=400,
        values=values,
        errors=errors,
        current=current,
        saved=False,
    )
