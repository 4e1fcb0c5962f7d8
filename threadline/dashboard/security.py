"""Headers on every dashboard response (docs/dashboard.md "Security model").

The policy allows scripts, styles and connections from our own origin only and no inline script, so text
that slipped through escaping still could not run; pages are never framed, sniffed, cached or referred on.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_COMMON: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
# Pages show an organization's data: never stored by the browser or a proxy, so the back button after
# sign-out shows nothing. The vendored scripts and styles do not change within a release.
_PAGE_CACHE = (b"cache-control", b"no-store")
_STATIC_CACHE = (b"cache-control", b"public, max-age=3600")
STATIC_PREFIX = "/static/"


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cache = _STATIC_CACHE if scope["path"].startswith(STATIC_PREFIX) else _PAGE_CACHE

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(n, v) for n, v in message.get("headers", []) if n.lower() != b"cache-control"]
                message["headers"] = [*headers, *_COMMON, cache]
            await send(message)

        await self.app(scope, receive, send_with_headers)
