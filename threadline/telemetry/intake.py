"""The intake: a small ASGI app of its own, on its own port, so it scales apart from the API.

For now it enforces its authentication rules (public keys only, rate limits) and answers 501 for the
ingestion itself, which arrives with the telemetry capability.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request

from threadline import health
from threadline.assembly import assemble, mount_routes
from threadline.config import Settings
from threadline.keys.auth import principal_of
from threadline.kit.errors import NotImplementedYet
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.schemas import ResponseModel
from threadline.runtime import Services

router = APIRouter(prefix="/v1", tags=["intake"])


class Accepted(ResponseModel):
    accepted: int


@router.post(
    "/logs",
    operation_id="logs.ingest",
    status_code=202,
    response_model=Accepted,
    responses=errors(400, 413, 501, *AUTHENTICATED),
)
async def ingest_logs(request: Request) -> Accepted:
    """Log records with a project's public key (`x-service-key`)."""
    principal_of(request)
    raise NotImplementedYet("Log ingestion is not available in this version yet.")


@router.post(
    "/events",
    operation_id="events.ingest",
    status_code=202,
    response_model=Accepted,
    responses=errors(400, 413, 501, *AUTHENTICATED),
)
async def ingest_events(request: Request) -> Accepted:
    """Product events with a project's public key (`x-service-key`)."""
    principal_of(request)
    raise NotImplementedYet("Event ingestion is not available in this version yet.")


def create_intake_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    settings = settings or Settings()
    app = assemble("Threadline intake", "intake", settings, services)
    mount_routes(app, router, health.router)
    return app
