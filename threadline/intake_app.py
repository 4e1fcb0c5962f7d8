"""The intake application: a small ASGI app of its own, on its own port, so it scales apart from the API
(``telemetry.intake`` serves its ingestion)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import Response

from threadline import health
from threadline.assembly import assemble, mount_routes
from threadline.config import Settings
from threadline.kit.errors import ApiError
from threadline.runtime import Services
from threadline.telemetry.cors import CorsMiddleware
from threadline.telemetry.intake import ROUTES, IngestEndpoints, render_intake_error, router
from threadline.telemetry.records import MAX_BODY_BYTES


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return render_intake_error(request.scope, exc, request.app.state.operations.operation_id(request.scope))


def create_intake_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    settings = settings or Settings()
    app = assemble(
        "Threadline intake",
        "intake",
        settings,
        services,
        body_limit=MAX_BODY_BYTES,
        render_error=render_intake_error,
        outer=[(CorsMiddleware, {"paths": frozenset(ROUTES)})],
        served_before_routing=(IngestEndpoints, dict.fromkeys(ROUTES)),  # every method: 405 is theirs
    )
    app.add_exception_handler(ApiError, _api_error)
    mount_routes(app, router, health.router)
    return app
