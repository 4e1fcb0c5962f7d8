"""``Idempotency-Key`` on every POST of the API (shared/DESIGN.md "Idempotency"), as ASGI middleware after
authentication (the key is the organization's) and before routing.

A request without the header costs one scan of its headers and nothing else. With one: its body is read
whole and fingerprinted (method, path, query, body); a row claimed with insert-or-ignore (group-committed
with other requests' claims, ``store.py``) decides, in the database that every API process shares, which
request is the key's first. The first runs and its answer is stored before it is sent (in the endpoint's
own transaction when the endpoint carries it, ``carried.py``, else in one of its own); any other gets
that answer again (``Idempotent-Replayed: true``), 409 ``IDEMPOTENCY_KEY_REUSED`` if its request differs,
or 409 ``IDEMPOTENCY_KEY_IN_USE`` while the first is in flight. A 5xx, or an exception, releases the key,
so the client's retry runs again. Rows live 24 h; a row left in flight by a dead process is taken over
after a minute."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import timedelta
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.access.principal import PRINCIPAL_SCOPE_KEY, Principal
from threadline.idempotency import carried
from threadline.idempotency.repository import IdempotencyRepository
from threadline.idempotency.store import IdempotencyStore
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.errors import ApiError, BadRequest, Conflict, ErrorRenderer, Reason, render_envelope
from threadline.kit.routing import OperationIndex
from threadline.kit.services import ServicesOf

HEADER = b"idempotency-key"
KEPT = timedelta(hours=24)
ABANDONED = timedelta(minutes=1)
_MAX_KEY = 255


class IdempotencyServices(Protocol):
    clock: Clock
    db: Database
    idempotency: IdempotencyStore


def _key_of(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            found: bytes = value
            return found
    return None


class IdempotencyMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        runtime: ServicesOf[IdempotencyServices],
        operations: OperationIndex,
        render_error: ErrorRenderer = render_envelope,
    ) -> None:
        self.app = app
        self.runtime = runtime
        self.operations = operations
        self.render_error = render_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        raw = _key_of(scope)
        principal = scope.get(PRINCIPAL_SCOPE_KEY)
        if raw is None or not isinstance(principal, Principal):
            await self.app(scope, receive, send)
            return
        if not 1 <= len(raw) <= _MAX_KEY or any(not 0x21 <= b <= 0x7E for b in raw):
            error = BadRequest(
                "Idempotency-Key must be 1 to 255 visible ASCII characters.",
                reason=Reason.VALIDATION_FAILED,
                missing_context=["Idempotency-Key"],
            )
            await self._refuse(scope, receive, send, error)
            return
        await self._keyed(scope, receive, send, raw.decode("ascii"), principal.organization_id)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, error: ApiError) -> None:
        await self.render_error(scope, error, self.operations.operation_id(scope))(scope, receive, send)

    async def _keyed(
        self, scope: Scope, receive: Receive, send: Send, key: str, organization_id: str
    ) -> None:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        fingerprint = hashlib.sha256(
            b"\0".join([b"POST", scope["path"].encode(), scope.get("query_string", b""), bytes(body)])
        ).hexdigest()
        services = self.runtime.services
        now = services.clock.now()
        stored = None
        if not await services.idempotency.claim(organization_id, key, fingerprint, now):
            async with services.db.transaction() as conn:
                repository = IdempotencyRepository(conn, organization_id)
                taken = await repository.take_over(
                    key, fingerprint, now, expired_before=now - KEPT, abandoned_before=now - ABANDONED
                )
                if not taken:
                    stored = await repository.get(key)
        if stored is not None:
            if stored.fingerprint != fingerprint:
                text = "This Idempotency-Key was used with another request."
                await self._refuse(scope, receive, send, Conflict(text, reason=Reason.IDEMPOTENCY_KEY_REUSED))
            elif stored.status is None:
                text = "A request with this Idempotency-Key is still in flight."
                await self._refuse(scope, receive, send, Conflict(text, reason=Reason.IDEMPOTENCY_KEY_IN_USE))
            else:
                await self._replay(send, stored.status, stored.content_type, stored.body or b"")
            return
        await self._first(scope, send, key, organization_id, bytes(body))

    async def _replay(self, send: Send, status: int, content_type: str | None, body: bytes) -> None:
        headers = [(b"content-length", str(len(body)).encode()), (b"idempotent-replayed", b"true")]
        if content_type is not None:
            headers.append((b"content-type", content_type.encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _first(self, scope: Scope, send: Send, key: str, organization_id: str, body: bytes) -> None:
        delivered = False

        async def replay_body() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            # Sent only once complete and stored (below): a replay must never differ from what was sent.

        services = self.runtime.services
        with carried.opened(organization_id, key) as pending:
            try:
                await self.app(scope, replay_body, capture)
            except asyncio.CancelledError:
                # Gone while its write was queued, that write may still commit (``GroupCommit.submit``):
                # a carried answer then commits with it, so the row is left for it (or for a take-over).
                if pending.carried is None:
                    await services.idempotency.answer(organization_id, key, None, None, b"")
                raise
            except BaseException:
                await services.idempotency.answer(organization_id, key, None, None, b"")
                raise
        assert start is not None
        status = int(start["status"])
        content = b"".join(chunks)
        content_type = next(
            (v.decode("latin-1") for n, v in start.get("headers", []) if n.lower() == b"content-type"), None
        )
        sent = (status, content_type, content)
        stored = pending.carried
        if stored is None or (stored.status, stored.content_type, stored.body) != sent:
            await services.idempotency.answer(
                organization_id, key, None if status >= 500 else status, content_type, content
            )
        await send(start)
        await send({"type": "http.response.body", "body": content})
