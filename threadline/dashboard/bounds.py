"""The dashboard's admission of a state-changing request, before any handler or form parser reads its body.

FastAPI parses a route's form before it runs the route's dependencies, so a guard written as a dependency
ran after the body was in memory: a ``POST /login`` of 1 GB with no cookie was read whole before its 403,
and a multipart part with a filename was spooled to disk. Here, in front of every dashboard route:

1. a ``Content-Length`` over ``THREADLINE_MAX_REQUEST_BODY_BYTES`` is 413 before a byte is read;
2. a body that is not a urlencoded form (multipart above all: the dashboard takes no files) is 400;
3. the ``Origin`` (when sent), the session (sign-in otherwise) or, on ``/login``, the sign-in form's cookie,
   and the ``X-CSRF-Token`` header when sent, are checked with no body read;
4. only then is the body read, counting, to the same limit (a body without ``Content-Length`` is cut off
   there, 413), and a form without the header has its token checked in at most ``MAX_FORM_FIELDS`` fields.

The body read is handed on to the route as it came, so its form is parsed within the same bounds.
``web.guard``, a dependency of every route, refuses a state-changing request this did not admit.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.dashboard.web import (
    ADMITTED_SCOPE_KEY,
    CSRF_FIELD,
    CSRF_HEADER,
    LOGIN_CSRF_COOKIE,
    SAFE_METHODS,
    Refused,
    SignInRequired,
    optional_viewer,
    own_origin,
)
from threadline.kit.errors import ApiError, BadRequest, PayloadTooLarge
from threadline.kit.services import ServicesOf

MAX_FORM_FIELDS = 200  # the largest dashboard form (an automation's) has about twenty
_FORM_TYPE = "application/x-www-form-urlencoded"

Refusal = Callable[[Request, Exception], Awaitable[Response]]


class AdmissionMiddleware:
    """``respond``: the dashboard's own answer to a refusal (a redirect to sign in, an error page)."""

    def __init__(self, app: ASGIApp, *, runtime: ServicesOf[Any], respond: Refusal) -> None:
        self.app = app
        self.runtime = runtime
        self.respond = respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            body = await self._admit(request)
        except (SignInRequired, Refused, ApiError) as refusal:
            response = await self.respond(request, refusal)
            await response(scope, receive, send)
            return
        scope[ADMITTED_SCOPE_KEY] = True
        await self.app(scope, _replay(body, receive), send)

    async def _admit(self, request: Request) -> bytes:
        services = self.runtime.services
        limit = services.settings.max_request_body_bytes
        length = request.headers.get("content-length")
        if length is not None and not length.isdigit():
            raise BadRequest("The Content-Length header is not a number.")
        if length is not None and int(length) > limit:
            raise PayloadTooLarge(_too_large(limit))
        has_body = length != "0" and (length is not None or "transfer-encoding" in request.headers)
        media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if has_body and media_type != _FORM_TYPE:
            raise BadRequest("The dashboard takes forms (application/x-www-form-urlencoded), never files.")

        origin = request.headers.get("origin")
        if origin is not None and origin != own_origin(request):
            raise Refused("This request came from another site and was refused.")
        if request.url.path == "/login":
            expected = request.cookies.get(LOGIN_CSRF_COOKIE)
        else:
            viewer = await optional_viewer(request, services)
            if viewer is None:
                raise SignInRequired
            expected = viewer.csrf_token
        if not expected:
            raise _stale()
        sent = request.headers.get(CSRF_HEADER)
        if sent is not None and not secrets.compare_digest(sent, expected):
            raise _stale()

        body = await _read(request.receive, limit)
        if sent is None:
            try:
                fields = parse_qsl(body.decode("latin-1"), max_num_fields=MAX_FORM_FIELDS)
            except ValueError:
                raise BadRequest(f"A dashboard form has at most {MAX_FORM_FIELDS} fields.") from None
            field = next((value for name, value in fields if name == CSRF_FIELD), "")
            if not field or not secrets.compare_digest(field.encode(errors="replace"), expected.encode()):
                raise _stale()
        return body


def _stale() -> Refused:
    return Refused("The form was out of date or incomplete; reload the page and try again.")


def _too_large(limit: int) -> str:
    return f"The request body is larger than the limit of {limit} bytes."


async def _read(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            raise BadRequest("The request ended before its body.")
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            raise PayloadTooLarge(_too_large(limit))
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then the connection's own messages (a disconnect, for a stream)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
