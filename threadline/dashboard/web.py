"""What every page shares: the signed-in viewer, the CSRF guard, and rendering.

Every state-changing request passes ``bounds.AdmissionMiddleware`` (a valid synchronizer token, an acceptable
``Origin``, a bounded form) before any body is parsed, and every route is included with ``guard``
(``dashboard.app``), which refuses one that did not; GET and HEAD never change state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Protocol
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from threadline.config import Settings
from threadline.dashboard.sessions import Viewer, find_session, lifetimes, touch_session
from threadline.kit.clock import Clock, isoformat
from threadline.kit.db import Database
from threadline.kit.deps import get_services

SAFE_METHODS = frozenset({"GET", "HEAD"})
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
# The sign-in form's token, before any session exists: a double-submit cookie (OWASP), compared with the
# form's hidden field.
LOGIN_CSRF_COOKIE = "threadline_login_csrf"
# Set by ``bounds.AdmissionMiddleware`` on a state-changing request it checked and admitted, and the
# viewer it found, so the route's own dependency does not look the session up twice.
ADMITTED_SCOPE_KEY = "threadline.dashboard.admitted"
VIEWER_SCOPE_KEY = "threadline.dashboard.viewer"


class PageServices(Protocol):
    """What the shared page machinery reads from the process's services."""

    settings: Settings
    db: Database
    clock: Clock


PageServicesDep = Annotated[PageServices, Depends(get_services)]


class SignInRequired(Exception):
    """No live session: answered with a redirect to ``/login`` (``dashboard.app``)."""


class Refused(Exception):
    """A request the dashboard will not act on (403): a missing or wrong CSRF token, a foreign Origin."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def session_cookie_name(request: Request) -> str:
    """``__Host-`` over https: the browser then insists on Secure, Path=/ and no Domain."""
    return "__Host-threadline_session" if is_https(request) else "threadline_session"


async def optional_viewer(request: Request, services: PageServicesDep) -> Viewer | None:
    if VIEWER_SCOPE_KEY in request.scope:
        found_before: Viewer | None = request.scope[VIEWER_SCOPE_KEY]
        return found_before
    viewer = await _find_viewer(request, services)
    request.scope[VIEWER_SCOPE_KEY] = viewer
    return viewer


async def _find_viewer(request: Request, services: PageServices) -> Viewer | None:
    raw = request.cookies.get(session_cookie_name(request))
    if not raw or len(raw) > 100:
        return None
    now = services.clock.now()
    async with services.db.transaction(write=False) as conn:
        found = await find_session(conn, raw, now, lifetimes(services.settings))
    if found is None:
        return None
    viewer, due = found
    if due:
        async with services.db.transaction(write=True) as conn:
            await touch_session(conn, viewer.session_hash, now)
    return viewer


async def signed_in(viewer: Annotated[Viewer | None, Depends(optional_viewer)]) -> Viewer:
    if viewer is None:
        raise SignInRequired
    return viewer


ViewerDep = Annotated[Viewer, Depends(signed_in)]


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


async def guard(request: Request) -> None:
    """Every state-changing request was checked before its body was read (``bounds``): one that reached a
    route without that check (the middleware left out of an app) is refused rather than trusted."""
    if request.method not in SAFE_METHODS and not request.scope.get(ADMITTED_SCOPE_KEY):
        raise Refused("The form was out of date or incomplete; reload the page and try again.")


_templates = Environment(
    loader=PackageLoader("threadline.dashboard", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_MARK = re.compile(r"&lt;mark&gt;(.*?)&lt;/mark&gt;", re.DOTALL)


def highlight(snippet: str | None) -> Markup:
    """The API's ``<mark>`` in a snippet becomes a highlight; everything else, markup included, is text."""
    escaped = str(escape(snippet or ""))
    return Markup(_MARK.sub(r"<mark>\1</mark>", escaped))  # noqa: S704 (escaped above; only <mark> restored)


def when(value: datetime | str | None) -> str:
    """A time as people read it, always UTC (the API's ISO form stays in the element's ``datetime``)."""
    if value is None:
        return "—"
    text = value if isinstance(value, str) else isoformat(value)
    return text.replace("T", " ")[:19] + " UTC"


def pretty_json(text: str) -> str | None:
    """JSON text indented for reading (a structured answer); None when it is not JSON."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return None


_templates.filters["highlight"] = highlight
_templates.filters["pretty_json"] = pretty_json
_templates.filters["when"] = when
_templates.filters["urlquote"] = lambda value: quote(str(value), safe="")
_templates.globals["isoformat"] = isoformat


def render(
    request: Request,
    template: str,
    viewer: Viewer | None = None,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A page or fragment. Every template sees ``viewer``, ``csrf_token`` (the session's) and ``path``."""
    html = _templates.get_template(template).render(
        request=request,
        viewer=viewer,
        csrf_token=viewer.csrf_token if viewer is not None else context.pop("csrf_token", ""),
        path=request.url.path,
        **context,
    )
    return HTMLResponse(html, status_code=status_code, headers=dict(headers or {}))


def render_fragment(template: str, **context: Any) -> str:
    """A fragment that depends on its context alone (no request, no viewer), so it can be shared between
    viewers: a live tail renders each record once for every tab that follows it."""
    return _templates.get_template(template).render(**context)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def safe_next(value: str | None) -> str:
    """Where to go after sign-in: only a path of ours (``/x``), never ``//host`` or a full URL. Browsers
    drop tabs and newlines from a URL and read ``\\`` as ``/``, so ``/\\t/host`` would be ``//host``: any
    whitespace, control character or backslash sends the browser home instead."""
    if value and value.startswith("/") and not value.startswith("//") and not _UNSAFE_IN_NEXT.search(value):
        return value
    return "/"


_UNSAFE_IN_NEXT = re.compile(r"[\\\s\x00-\x1f\x7f]")
