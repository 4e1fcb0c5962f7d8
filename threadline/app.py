"""The versioned API application (``/v1``), its probes and its reference docs."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import Response

from threadline import docs, health
from threadline.agents.endpoints import router as agents_router
from threadline.assembly import assemble, mount_routes
from threadline.automations.endpoints import router as automations_router
from threadline.billing.endpoints import router as billing_router
from threadline.config import Settings
from threadline.contract import build_contract, render
from threadline.dashboard.app import create_dashboard
from threadline.idempotency.middleware import IdempotencyMiddleware
from threadline.intake_app import create_intake_app
from threadline.keys.endpoints import router as keys_router
from threadline.mcp_servers.endpoints import router as mcp_servers_router
from threadline.me.endpoints import router as me_router
from threadline.messages.endpoints import router as messages_router
from threadline.metrics_endpoint import OPERATION_ID as METRICS_OPERATION
from threadline.metrics_endpoint import MetricsEndpoint
from threadline.projects.endpoints import router as projects_router
from threadline.runs.endpoints import router as runs_router
from threadline.runtime import Services
from threadline.search.endpoints import router as search_router
from threadline.settings.endpoints import router as settings_router
from threadline.telemetry.endpoints import router as logs_router
from threadline.telemetry.misdirected import MisdirectedIntake
from threadline.threads.endpoints import router as threads_router
from threadline.threads.fast_list import LIST_ROUTE, ThreadListEndpoint
from threadline.webhooks.endpoints import router as webhooks_router

# Paths the API app answers itself; every other path is the dashboard's.
_API_PATHS = ("/v1", "/docs", "/healthz", "/readyz")


def create_app(
    settings: Settings | None = None,
    services: Services | None = None,
    *,
    chores: bool = True,
    intake_port: int | None = None,
) -> FastAPI:
    """``chores``: whether the app's own services (``services`` not given) run the background chores, as
    any process serving the API does; tests turn them off to run each chore when they choose.
    ``intake_port``: where this process's intake listens (``threadline serve``), named to a client that
    sends telemetry to the API's port (``telemetry.misdirected``)."""
    settings = settings or Settings()
    app = assemble(
        "Threadline API",
        "api",
        settings,
        services,
        outer=[(MisdirectedIntake, {"intake_port": intake_port})],
        inner=[(IdempotencyMiddleware, {})],
        served_before_routing=(ThreadListEndpoint, LIST_ROUTE),
        chores=chores,
    )
    mount_routes(
        app,
        me_router,
        keys_router,
        projects_router,
        threads_router,
        messages_router,
        runs_router,
        settings_router,
        automations_router,
        agents_router,
        mcp_servers_router,
        webhooks_router,
        search_router,
        billing_router,
        logs_router,
        health.router,
        docs.router,
    )
    app.mount("/docs/assets", docs.assets, name="docs-assets")
    app.pages = create_dashboard(app.state.runtime)
    app.api_paths = _API_PATHS
    if settings.metrics:
        app.add_api_route(
            "/metrics",
            MetricsEndpoint(app.state.runtime).scrape,
            methods=["GET"],
            include_in_schema=False,
            operation_id=METRICS_OPERATION,
        )
        app.api_paths = (*_API_PATHS, "/metrics")
    contract: list[bytes] = []

    @app.get("/v1/openapi.json", include_in_schema=False)
    async def openapi() -> Response:
        if not contract:
            contract.append(render(build_contract(app, create_intake_app(settings))).encode())
        return Response(contract[0], media_type="application/json")

    return app
