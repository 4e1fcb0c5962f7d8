"""The dashboard as an ASGI app of its own, which the API app hands every path outside its API (``/v1``,
``/docs``, the probes): its errors are pages, not JSON envelopes, and every response carries the
dashboard's security headers."""

from __future__ import annotations

import logging
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from threadline.dashboard import signin
from threadline.dashboard.bounds import AdmissionMiddleware
from threadline.dashboard.pages import (
    agents,
    automations,
    billing,
    keys,
    logs,
    mcp_servers,
    overview,
    projects,
    runs,
    search,
    settings,
    threads,
    webhooks,
)
from threadline.dashboard.security import SecurityHeadersMiddleware
from threadline.dashboard.web import Refused, SignInRequired, guard, is_htmx, optional_viewer, render
from threadline.kit.context import log_unhandled, request_id_of
from threadline.kit.errors import ApiError
from threadline.kit.faults import dependency_of, unavailable
from threadline.kit.services import ServicesOf

log = logging.getLogger(__name__)

PAGE_ROUTERS = (
    signin.router,
    overview.router,
    keys.router,
    mcp_servers.router,
    webhooks.router,
    settings.router,
    projects.router,
    threads.router,
    runs.router,
    logs.router,
    automations.router,
    agents.router,
    search.router,
    billing.router,
)


def create_dashboard(runtime: ServicesOf[object]) -> FastAPI:
    """``runtime``: the API app's own, whose services open in the API app's lifespan."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.runtime = runtime
    for router in PAGE_ROUTERS:
        app.include_router(router, dependencies=[Depends(guard)])
    app.mount("/static", StaticFiles(packages=[("threadline.dashboard", "static")]), name="static")
    app.add_middleware(AdmissionMiddleware, runtime=runtime, respond=_refusal)
    app.add_middleware(SecurityHeadersMiddleware)  # the outermost: refusals carry the headers too
    app.add_exception_handler(SignInRequired, _sign_in)
    app.add_exception_handler(Refused, _refused)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(Exception, _unexpected)
    return app


async def _error_page(request: Request, status_code: int, title: str, message: str) -> Response:
    try:
        viewer = await optional_viewer(request, request.app.state.runtime.services)
    except Exception:  # the error page must render even when the database is what failed
        viewer = None
    return render(request, "error.html", viewer, status_code=status_code, title=title, message=message)


async def _sign_in(request: Request, exc: Exception) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    location = f"/login?next={quote(target, safe='/')}" if target not in ("/", "/logout") else "/login"
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": location})
    if "text/event-stream" in request.headers.get("accept", ""):
        return Response("Signed out.", status_code=401, media_type="text/plain")
    return RedirectResponse(location, status_code=303)


async def _refusal(request: Request, exc: Exception) -> Response:
    """A request ``AdmissionMiddleware`` refused before routing, answered as a route's would be."""
    if isinstance(exc, SignInRequired):
        return await _sign_in(request, exc)
    if isinstance(exc, Refused):
        return await _refused(request, exc)
    return await _api_error(request, exc)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return await _error_page(request, 403, "Refused", exc.message)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    if exc.status_code == 404:
        return await _not_found(request)
    return await _error_page(request, exc.status_code, "That did not work", exc.message)


async def _not_found(request: Request) -> Response:
    return await _error_page(
        request, 404, "Not found", "There is nothing here, or it belongs to another organization."
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return await _not_found(request)
    if exc.status_code == 405:
        return await _error_page(request, 405, "Not allowed", f"{request.method} is not allowed here.")
    return await _error_page(request, exc.status_code, "That did not work", str(exc.detail))


async def _invalid(request: Request, exc: Exception) -> Response:
    return await _error_page(request, 400, "That did not work", "The request was not valid.")


async def _unexpected(request: Request, exc: Exception) -> Response:
    dependency = dependency_of(exc)
    if dependency is not None:
        log.warning("dashboard request failed: %s unavailable: %s", dependency, type(exc).__name__)
        down = unavailable(exc, dependency)
        return render(
            request, "error.html", None, status_code=down.status, title="Unavailable", message=down.message
        )
    log_unhandled(log, exc, "dashboard request failed", request_id_of(request.scope))
    return render(
        request,
        "error.html",
        None,
        status_code=500,
        title="Something went wrong",
        message="The dashboard failed to answer; the error is in the server's log.",
    )
