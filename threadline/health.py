"""Probes for process managers and load balancers; unauthenticated and outside /v1."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel

from threadline.kit.deps import ServicesDep
from threadline.kit.errors import Reason, ServiceUnavailable
from threadline.kit.openapi import errors

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok", "ready"]


@router.get("/healthz", operation_id="health.live", response_model=Health)
async def live() -> Health:
    """The process is up and serving."""
    return Health(status="ok")


@router.get("/readyz", operation_id="health.ready", response_model=Health, responses=errors(503))
async def ready(services: ServicesDep) -> Health:
    """The database (and Redis, when configured) answer."""
    try:
        await services.check_ready()
    except Exception as exc:
        raise ServiceUnavailable("A storage backend is unreachable.", reason=Reason.DEPENDENCY_DOWN) from exc
    return Health(status="ready")
