"""``/login`` and ``/logout``. A failed sign-in says the same whether or not the email exists, and costs
the same (``users.service.verify_login``); attempts are throttled per client address and per account."""

from __future__ import annotations

import secrets
from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from threadline.config import Settings
from threadline.dashboard.passwords import throttle
from threadline.dashboard.sessions import Viewer, end_session, open_session
from threadline.dashboard.web import (
    LOGIN_CSRF_COOKIE,
    is_https,
    optional_viewer,
    render,
    safe_next,
    session_cookie_name,
)
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.deps import get_services
from threadline.kit.ratelimit import RateLimiter
from threadline.users.service import verify_login


class SignInServices(Protocol):
    settings: Settings
    db: Database
    clock: Clock
    limiter: RateLimiter


SignInServicesDep = Annotated[SignInServices, Depends(get_services)]

router = APIRouter()


def _login_form(
    request: Request, *, email: str = "", error: str | None = None, status_code: int = 200
) -> Response:
    token = request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(32)
    response = render(
        request,
        "login.html",
        csrf_token=token,
        email=email,
        error=error,
        next=safe_next(request.query_params.get("next")),
        status_code=status_code,
    )
    response.set_cookie(
        LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", secure=is_https(request), path="/login"
    )
    return response


@router.get("/login")
async def login_page(
    request: Request, viewer: Annotated[Viewer | None, Depends(optional_viewer)]
) -> Response:
    if viewer is not None:
        return RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
    return _login_form(request)


@router.post("/login")
async def sign_in(
    request: Request,
    services: SignInServicesDep,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/",
) -> Response:
    email = email.strip()
    throttled = await throttle(request, services, email)
    if throttled is not None and not throttled.account_only:
        return _too_many(request, email, throttled.wait)
    async with services.db.transaction(write=False) as conn:
        user = await verify_login(conn, email, password) if email and password else None
    # An account's own bucket refuses wrong passwords only: anyone may empty it (ten guesses from
    # anywhere), and it must not lock its owner out. Guessing stays slow through the address's bucket,
    # which refused above, before any password was checked.
    if throttled is not None and user is None:
        return _too_many(request, email, throttled.wait)
    if user is None:
        return _login_form(request, email=email, error="The email or password is not right.", status_code=400)
    # Always a new id (no session fixation): a session the browser already held ends here, so a cookie
    # planted or left from before the sign-in opens nothing afterwards.
    previous = request.cookies.get(session_cookie_name(request))
    async with services.db.transaction(write=True) as conn:
        if previous:
            await end_session(conn, previous)
        raw, _csrf = await open_session(conn, user.id, user.organization_id, services.clock.now())
    response = RedirectResponse(safe_next(next), status_code=303)
    _set_session_cookie(request, response, raw)
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return response


def _too_many(request: Request, email: str, wait: int) -> Response:
    message = f"Too many sign-in attempts. Try again in {wait} seconds."
    return _login_form(request, email=email, error=message, status_code=429)


@router.post("/logout")
async def sign_out(request: Request, services: SignInServicesDep) -> Response:
    """The session is deleted on the server, not only forgotten by the browser. (Reached through the
    guard: a session's CSRF token is required, so another site cannot sign a user out.)"""
    raw = request.cookies.get(session_cookie_name(request))
    if raw:
        async with services.db.transaction(write=True) as conn:
            await end_session(conn, raw)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(session_cookie_name(request), path="/", secure=is_https(request), httponly=True)
    return response


def _set_session_cookie(request: Request, response: Response, raw: str) -> None:
    """No Max-Age: the browser forgets the cookie when it closes; the server's timeouts end it anyway."""
    response.set_cookie(
        session_cookie_name(request), raw, httponly=True, samesite="lax", secure=is_https(request), path="/"
    )
