"""How an ASGI app of ours is put together: the same middleware order, error handling and lifecycle for
the API and the intake, so the two surfaces cannot drift apart.

    RequestContextMiddleware   request id, rate-limit headers, 500 envelope for anything unhandled
      (surface's own)          the intake's CORS, which must answer preflights before authentication
        AccessMiddleware       body size, credential, key type, rate limit (before routing)
          (surface's own)      the intake's ingestion endpoints, served as plain ASGI
            FastAPI router     handlers; ApiError/validation/routing errors -> envelope
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI

from threadline.config import Settings
from threadline.keys.middleware import AccessMiddleware, Surface
from threadline.kit.context import RequestContextMiddleware
from threadline.kit.errors import ErrorRenderer, render_envelope
from threadline.kit.handlers import install_error_handlers
from threadline.kit.routing import OperationIndex
from threadline.runtime import Runtime, Services, open_services


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
) -> FastAPI:
    """``services`` given: they belong to the caller (``serve`` shares one set between both surfaces).
    Not given: the app's lifespan opens and closes its own. ``outer``: middleware classes and their
    arguments (besides ``runtime``), run after the request id is set and before authentication;
    ``inner``: the same, run after authentication and before routing."""
    runtime = Runtime()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if services is not None:
            runtime.services = services
            yield
            return
        async with open_services(settings) as own:
            runtime.services = own
            try:
                yield
            finally:
                runtime.services = None

    app = FastAPI(title=title, openapi_url=None, docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.runtime = runtime
    app.state.settings = settings
    app.state.operations = operations = OperationIndex(app.router.routes)
    install_error_handlers(app)
    for middleware, arguments in reversed(inner):
        app.add_middleware(middleware, runtime=runtime, **arguments)
    app.add_middleware(
        AccessMiddleware,
        runtime=runtime,
        operations=operations,
        surface=surface,
        body_limit=body_limit,
        render_error=render_error,
    )
    for middleware, arguments in reversed(outer):
        app.add_middleware(middleware, runtime=runtime, **arguments)
    app.add_middleware(RequestContextMiddleware, operations=operations)
    return app


def mount_routes(app: FastAPI, *routers: APIRouter) -> None:
    """Adds each router's routes to the app itself, flat.

    ``include_router`` keeps a wrapper per included router that is walked on every request; measured on
    ``GET /v1/me`` it cost as much as authentication and rate limiting together. Routers therefore carry
    their full path prefix (``/v1/keys``) and their routes join the app's route table directly."""
    for router in routers:
        app.router.routes.extend(router.routes)
