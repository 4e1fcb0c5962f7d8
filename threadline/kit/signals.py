"""Cross-process signals: small facts every process must learn at once (a key was revoked, an
organization's limits changed). In process they are plain callbacks; with Redis they travel over pub/sub.

Pub/sub delivers only to connected subscribers, so a subscriber that reconnects may have missed signals.
It therefore emits the ``reset`` topic after every (re)connection, and handlers treat it as "forget every
cached fact". Caches also expire on their own, so a lost signal delays a change by at most one TTL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Protocol

from redis.asyncio import Redis

log = logging.getLogger(__name__)

Handler = Callable[[str, str], None]
RESET = "reset"


class SignalBus(Protocol):
    def subscribe(self, handler: Handler) -> None: ...

    async def publish(self, topic: str, payload: str) -> None: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


class _Handlers:
    def __init__(self) -> None:
        self._handlers: list[Handler] = []

    def subscribe(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def dispatch(self, topic: str, payload: str) -> None:
        for handler in self._handlers:
            try:
                handler(topic, payload)
            except Exception:
                log.exception("signal handler failed for topic %s", topic)


class MemorySignalBus(_Handlers):
    async def publish(self, topic: str, payload: str) -> None:
        self.dispatch(topic, payload)

    async def start(self) -> None:
        """Nothing to connect."""

    async def aclose(self) -> None:
        """Nothing to close."""


class RedisSignalBus(_Handlers):
    _RETRY_SECONDS = 0.5

    def __init__(self, redis: Redis, prefix: str) -> None:
        super().__init__()
        self._redis = redis
        self._channel = prefix + "signals"
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def publish(self, topic: str, payload: str) -> None:
        # Local handlers run first so the publishing process never serves a stale answer itself.
        self.dispatch(topic, payload)
        await self._redis.publish(self._channel, json.dumps({"topic": topic, "payload": payload}))

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="threadline-signals")
        await asyncio.wait_for(self._ready.wait(), timeout=10)

    async def _listen(self) -> None:
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(self._channel)
                    self.dispatch(RESET, "")
                    self._ready.set()
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            self._receive(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception:  # a lost connection or a malformed message: resubscribe, never die
                log.warning("signal subscription lost; reconnecting", exc_info=True)
                await asyncio.sleep(self._RETRY_SECONDS)

    def _receive(self, data: str) -> None:
        try:
            signal = json.loads(data)
            topic, payload = str(signal["topic"]), str(signal["payload"])
        except (ValueError, TypeError, KeyError):
            log.warning("ignored a malformed signal on %s", self._channel)
            return
        self.dispatch(topic, payload)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
