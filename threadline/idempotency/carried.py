"""A keyed request's answer stored in the endpoint's own transaction, beside the resource it makes.

The middleware stores the first request's answer in a transaction of its own after the endpoint has
committed: a keyed ``POST`` waited for three commits one after another (claim, the endpoint's write, the
answer), and at fixed concurrency that latency, not the writer's capacity, held keyed ``POST /v1/threads``
to 0.66x of the unkeyed rate (bench/HISTORY.md). An endpoint that can render its answer before it commits
asks ``carry`` for it and writes it (``store.write_answers``) in the same transaction as its resource:
one commit fewer, and the resource and its answer are durable together. A process that dies before that
commit leaves neither (the key's row stays in flight and is taken over after a minute, as before); one that
dies after it leaves both, so a retry replays instead of making a second resource.

The middleware opens a ``Pending`` for each first request (``opened``); ``carry`` returns the ``Answer`` to
write, or None when the request has no key. The endpoint must then answer exactly those bytes; the
middleware checks that it did, and stores what was sent itself otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from threadline.idempotency.store import Answer


@dataclass(slots=True)
class Pending:
    organization_id: str
    key: str
    carried: Answer | None = None  # what the endpoint's transaction writes, once it asked


_PENDING: ContextVar[Pending | None] = ContextVar("threadline-idempotency-pending", default=None)


@contextmanager
def opened(organization_id: str, key: str) -> Iterator[Pending]:
    """The first request of a key runs inside this (the middleware's ``_first``)."""
    pending = Pending(organization_id, key)
    token = _PENDING.set(pending)
    try:
        yield pending
    finally:
        _PENDING.reset(token)


def carry(status: int, content_type: str, body: bytes) -> Answer | None:
    """The answer this request's transaction is to store, or None when it has no idempotency key. Call it
    once, right before queueing the write, and answer exactly these bytes."""
    pending = _PENDING.get()
    if pending is None:
        return None
    pending.carried = Answer(pending.organization_id, pending.key, status, content_type, body)
    return pending.carried
