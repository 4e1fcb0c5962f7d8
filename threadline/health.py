"""Probes for process managers and load balancers; unauthenticated and outside /v1."""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from threadline.kit.deps import get_services
from threadline.kit.faults import dependency_of, unavailable
from threadline.kit.openapi import errors


class ProbedServices(Protocol):
    """What the readiness probe asks of the process's services."""

    async def check_ready(self) -> None: ...


ServicesDep = Annotated[ProbedServices, Depends(get_services)]

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok", "ready"]


@router.get("/healthz", operation_id="health.live", response_model=Health)
async def live() -> Health:
    """The process is up and serving."""
    return Health(status="ok")


@router.get("/readyz", operation_id="health.ready", response_model=Health, responses=errors(503))
async def ready(services: ServicesDep) -> Health:
    """The database (and Redis, when configured) answer, and the embedded shape's disk has room to write."""
    try:
        await services.check_ready()
    except Exception as exc:
        raise unavailable(exc, dependency_of(exc) or "database") from exc
    return Health(status="ready")
