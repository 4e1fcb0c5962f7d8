"""The webhook dispatcher: fans the runs' outbox out into attempts and sends the due ones, in every process
that handles runs (``threadline serve``, the API app under another server, ``threadline worker``).

Concurrency (see ARCHITECTURE.md "Webhooks"): one loop finds due attempts and claims each in a short
transaction of its own; each claimed attempt is sent by a task of its own, outside any transaction, with a
bounded timeout, so a slow endpoint holds only its own tasks. At most ``PER_ENDPOINT`` attempts per
endpoint are in flight in a process, and at most ``concurrency`` in all, so one organization's dead
endpoint takes a few slots, never the loop nor another endpoint's turn. Claims carry a lease
(``claimed_until``): an attempt whose sender died is taken up again once it lapses (at least once).

Woken by signals (a run's fact was written, a test or resend was queued) and otherwise every second, the
interval retries are due at; ``wake()`` lets tests that move the clock skip the wait."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import replace
from datetime import timedelta

import httpx2

from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.egress import EgressPolicy, pinned_client
from threadline.kit.encryption import SecretBox
from threadline.kit.ids import new_id
from threadline.kit.metrics import WEBHOOK_DELIVERIES
from threadline.kit.signals import SignalBus
from threadline.runs.outbox import OUTBOX_WRITTEN, OutboxAcrossOrganizations
from threadline.webhooks import fanout, signing
from threadline.webhooks.repository import Attempt, DeliveriesAcrossOrganizations, WebhookRepository
from threadline.webhooks.service import DELIVERIES_QUEUED, open_secret

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10.0
# Seconds after the Nth failed attempt before the next (the Standard Webhooks spec's suggested schedule):
# the first retry within 10 s, the last about 27.6 h after the first attempt; then the delivery has failed.
BACKOFF_SECONDS = (5, 300, 1800, 7200, 18000, 36000, 36000)
POLL_SECONDS = 1.0
CONCURRENCY = 64
# Attempts one process sends to one endpoint at once: enough that a busy endpoint keeps up with 20 events a
# second (an attempt costs a claim, the POST and a record: tens of ms on SQLite), few enough that a dead
# endpoint holds at most this many of the CONCURRENCY slots.
PER_ENDPOINT = 4
# A claim outlives the attempt it covers by a margin; past it, a dead sender's attempt is taken up again.
_LEASE = timedelta(seconds=TIMEOUT_SECONDS + 5)
_STOP_SECONDS = 5.0


def retry_after(attempt: int) -> int | None:
    """Seconds until the attempt after ``attempt`` (1-based) fails; None: it was the last."""
    return BACKOFF_SECONDS[attempt - 1] if attempt <= len(BACKOFF_SECONDS) else None


class WebhookDispatcher:
    def __init__(
        self,
        db: Database,
        signals: SignalBus,
        clock: Clock,
        egress: EgressPolicy,
        box: SecretBox | None,
        *,
        timeout: float = TIMEOUT_SECONDS,
        concurrency: int = CONCURRENCY,
    ) -> None:
        self._db = db
        self.clock = clock
        self._box = box
        self._concurrency = concurrency
        self._http = pinned_client(egress, timeout=httpx2.Timeout(timeout))
        self._wake = asyncio.Event()
        self._in_flight: set[asyncio.Task[None]] = set()
        self._per_endpoint: dict[str, int] = {}  # endpoint id -> its attempts in flight here
        self._loop: asyncio.Task[None] | None = None
        signals.subscribe(self._on_signal)

    def _on_signal(self, topic: str, _payload: str) -> None:
        if topic in (OUTBOX_WRITTEN, DELIVERIES_QUEUED):
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="threadline-webhooks")

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.round()
            except Exception:
                log.exception("webhook dispatch round failed; trying again")
            # ``asyncio.timeout``, not ``wait_for``: on Python 3.11 a cancel that lands just after a wake has
            # completed the inner wait is swallowed by ``wait_for``, and the loop outlived ``aclose``.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):
                    await self._wake.wait()

    async def round(self) -> None:
        """Fans out what the outbox holds, then starts the due attempts it has room for."""
        async with self._db.transaction(write=False) as conn:
            waiting = await OutboxAcrossOrganizations(conn).pending()
        while waiting:
            async with self._db.transaction() as conn:
                waiting = await fanout.fan_out(conn) == fanout.BATCH
        room = self._concurrency - len(self._in_flight)
        if room <= 0:
            return
        now = self.clock.now()
        full = [webhook_id for webhook_id, count in self._per_endpoint.items() if count >= PER_ENDPOINT]
        async with self._db.transaction(write=False) as conn:
            due = await DeliveriesAcrossOrganizations(conn).due(now, room, full)
        chosen: list[tuple[str, str]] = []
        taken: dict[str, int] = {}
        for delivery_id, webhook_id in due:
            if self._per_endpoint.get(webhook_id, 0) + taken.get(webhook_id, 0) < PER_ENDPOINT:
                chosen.append((delivery_id, webhook_id))
                taken[webhook_id] = taken.get(webhook_id, 0) + 1
        if not chosen:
            return
        async with self._db.transaction() as conn:  # one write for every claim of the round
            across = DeliveriesAcrossOrganizations(conn)
            claimed = [await across.claim(delivery_id, now, now + _LEASE) for delivery_id, _ in chosen]
        for attempt in claimed:
            if attempt is None:
                continue  # another process took it
            webhook_id = attempt.delivery.webhook_id
            task = asyncio.create_task(self._send(attempt), name=f"threadline-webhook-{attempt.delivery.id}")
            self._in_flight.add(task)
            self._per_endpoint[webhook_id] = self._per_endpoint.get(webhook_id, 0) + 1
            task.add_done_callback(functools.partial(self._done, webhook_id))

    def _done(self, webhook_id: str, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        left = self._per_endpoint.get(webhook_id, 1) - 1
        if left > 0:
            self._per_endpoint[webhook_id] = left
        else:
            self._per_endpoint.pop(webhook_id, None)
        self._wake.set()  # the endpoint's next attempt may be due

    async def _send(self, attempt: Attempt) -> None:
        status_code: int | None = None
        error: str | None = None
        try:
            if self._box is None:
                raise RuntimeError("no encryption key is configured to open the webhook's secret")
            secret = open_secret(self._box, attempt.delivery.webhook_id, attempt.secret_sealed)
            timestamp = int(self.clock.now().timestamp())
            headers = signing.headers(secret, attempt.delivery.event_id, timestamp, attempt.body)
            response = await self._http.post(
                attempt.url, content=attempt.body.encode(), headers=headers, follow_redirects=False
            )
            status_code = response.status_code
            if not 200 <= status_code < 300:
                error = f"HTTP {status_code}"
        except httpx2.TimeoutException:
            error = f"no answer within {TIMEOUT_SECONDS:g} s"
        except httpx2.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        except Exception as exc:
            log.exception("webhook attempt %s failed", attempt.delivery.id)
            error = f"{type(exc).__name__}"
        await self._record(attempt, status_code, error)

    async def _record(self, attempt: Attempt, status_code: int | None, error: str | None) -> None:
        delivery = attempt.delivery
        now = self.clock.now()
        WEBHOOK_DELIVERIES.labels("succeeded" if error is None else "failed").inc()
        if error is None:
            async with self._db.transaction() as conn:
                await DeliveriesAcrossOrganizations(conn).finish(
                    delivery.id, "succeeded", status_code, None, None
                )
            return
        wait = retry_after(delivery.attempt)
        next_at = now + timedelta(seconds=wait) if wait is not None else None
        async with self._db.transaction() as conn:
            finished = await DeliveriesAcrossOrganizations(conn).finish(
                delivery.id, "failed", status_code, error, next_at
            )
            if finished and next_at is not None:
                retry = replace(
                    delivery, id=new_id("whd"), attempt=delivery.attempt + 1, status="pending",
                    response_status=None, error=None, created_at=now, next_attempt_at=next_at,
                )  # fmt: skip
                await WebhookRepository(conn, delivery.organization_id).insert_delivery(retry)

    async def aclose(self) -> None:
        tasks = [t for t in (self._loop, *self._in_flight) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=_STOP_SECONDS)
        await self._http.aclose()
