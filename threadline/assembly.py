"""How an ASGI app of ours is put together: the same middleware order, error handling and lifecycle for
the API and the intake, so the two surfaces cannot drift apart.

    RequestMetrics             requests by operation and status, their durations (THREADLINE_METRICS)
    RequestContextMiddleware   request id, rate-limit headers, 500 envelope for anything unhandled
      (surface's own)          the intake's CORS, which must answer preflights before authentication
        AccessMiddleware       body size, credential, key type, rate limit (before routing)
          FastAPI router       handlers; ApiError/validation/routing errors -> envelope
          or, for the routes a surface serves before routing (the intake's ingestion, the API's
          GET /v1/threads), its own ASGI endpoints, reached without FastAPI's routing and middleware
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.types import ASGIApp, Receive, Scope, Send

from threadline.config import Settings
from threadline.keys.middleware import AccessMiddleware, Surface
from threadline.kit.context import RequestContextMiddleware
from threadline.kit.errors import ErrorRenderer, render_envelope
from threadline.kit.handlers import install_error_handlers
from threadline.kit.request_metrics import RequestMetrics
from threadline.kit.routing import OperationIndex
from threadline.kit.services import Runtime
from threadline.runtime import Services, open_services

# FastAPI's own OpenTelemetry instrumentation stays off: it would export request data (exception messages,
# traces) wherever OTEL_* variables point, and the check for it alone cost ~5 us per request (it reads the
# environment each time). Threadline makes no network calls but to its configured model provider.
_NO_FRAMEWORK_TELEMETRY: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "operation_spans": False,
    "auto_configure": False,
}


def assemble(
    title: str,
    surface: Surface,
    settings: Settings,
    services: Services | None,
    *,
    body_limit: int | None = None,
    render_error: ErrorRenderer = render_envelope,
    outer: Sequence[tuple[type[Any], dict[str, Any]]] = (),
    inner: Sequence[tuple[type[Any], dict[str, Any]]] = (),
    served_before_routing: tuple[type[Any], FastRoutes] | None = None,
    chores: bool = False,
) -> ServedApp:
    """``services`` given: they belong to the caller (``serve`` shares one set between both surfaces).
    Not given: the app's lifespan opens and closes its own, with the background chores if ``chores``
    (``threadline.chores``). ``outer``: middleware classes and their arguments (besides ``runtime``), run
    after the request id is set and before authentication; ``inner``: likewise, run after authentication
    (the API's idempotency keys, which belong to the caller's organization).
    ``served_before_routing``: an ASGI class (built with the app to fall back to and ``runtime``) that
    answers the given routes itself, after authentication, outside FastAPI (see ``ServedApp``)."""
    runtime: Runtime[Services] = Runtime()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if services is not None:
            runtime.services = services
            yield
            return
        async with open_services(settings, chores=chores) as own:
            runtime.services = own
            try:
                yield
            finally:
                runtime.services = None

    app = ServedApp(
        title=title,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        telemetry=_NO_FRAMEWORK_TELEMETRY,
    )
    app.state.runtime = runtime
    app.state.settings = settings
    app.state.operations = operations = OperationIndex(app.router.routes)
    install_error_handlers(app)
    access = {
        "runtime": runtime,
        "operations": operations,
        "surface": surface,
        "body_limit": body_limit,
        "render_error": render_error,
    }
    fixed_paths = frozenset(served_before_routing[1]) if served_before_routing is not None else frozenset()
    measured = [(RequestMetrics, {"operations": operations, "fixed_paths": fixed_paths})]
    stack: list[tuple[type[Any], dict[str, Any]]] = [
        *(measured if settings.metrics else ()),
        (RequestContextMiddleware, {"operations": operations}),
        *((middleware, {"runtime": runtime, **arguments}) for middleware, arguments in outer),
        (AccessMiddleware, access),
        *(
            (middleware, {"runtime": runtime, "operations": operations, **arguments})
            for middleware, arguments in inner
        ),
    ]
    for middleware, arguments in reversed(stack):
        app.add_middleware(middleware, **arguments)
    if served_before_routing is not None:
        endpoints, routes = served_before_routing
        chain: ASGIApp = endpoints(app.framework, runtime=runtime)
        for middleware, arguments in reversed(stack):
            chain = middleware(chain, **arguments)
        app.fast_routes, app.fast_chain = routes, chain
    return app


# The routes an app serves before routing: each path with the methods served there (None: every method;
# the endpoints then answer the others themselves, as the intake answers 405). Any other method on such a
# path goes through FastAPI as usual (POST /v1/threads), never through the middleware twice.
FastRoutes = Mapping[str, frozenset[str] | None]
_NOT_SERVED: frozenset[str] = frozenset()


class ServedApp(FastAPI):
    """A FastAPI app whose hottest routes may skip the framework's own layers.

    Requests to ``fast_routes`` go through the same middleware (request id, CORS, access) to endpoints
    that answer every such request themselves, but not through FastAPI's routing or its error, telemetry
    and body-limit wrappers, which cost more CPU per request than an intake record or a thread page
    itself (bench/HISTORY.md has the figures)."""

    fast_routes: FastRoutes = {}
    fast_chain: ASGIApp | None = None
    # The web dashboard (``threadline.dashboard``): every HTTP path outside ``api_paths`` goes there.
    pages: ASGIApp | None = None
    api_paths: tuple[str, ...] = ()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.pages is not None
            and scope["type"] == "http"
            and not scope["path"].startswith(self.api_paths)
        ):
            await self.pages(scope, receive, send)
            return
        if self.fast_chain is not None and scope["type"] == "http":
            methods = self.fast_routes.get(scope["path"], _NOT_SERVED)
            if methods is None or scope["method"] in methods:
                await self.fast_chain(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        await super().__call__(scope, receive, send)


def mount_routes(app: FastAPI, *routers: APIRouter) -> None:
    """Adds each router's routes to the app itself, flat.

    ``include_router`` keeps a wrapper per included router that is walked on every request, which on
    ``GET /v1/me`` cost as much as authentication and rate limiting together. Routers therefore carry
    their full path prefix (``/v1/keys``) and their routes join the app's route table directly."""
    for router in routers:
        app.router.routes.extend(router.routes)
