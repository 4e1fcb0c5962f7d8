"""``threadline worker``: executes queued runs (the distributed shape), until SIGTERM or Ctrl-C.

Workers share nothing but the database and Redis: each claims runs with ``FOR UPDATE SKIP LOCKED``,
publishes their events through Redis (every API process streams them), and ends the runs of workers that
died (lease expiry). Stopping one ends the runs it was executing ``failed`` (``EXECUTOR_STOPPED``) rather
than leaving them running. Workers run the background chores too (``threadline.chores``), so a deployment
needs no ``serve`` for retention and search postings."""

from __future__ import annotations

import asyncio
import logging
import signal

from threadline.config import Settings
from threadline.runtime import open_services

log = logging.getLogger(__name__)


async def work(settings: Settings, ready: asyncio.Event | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with open_services(settings, runs="worker", chores=True) as services:
            assert services.executor is not None
            log.info(
                "worker %s executing runs (up to %d at once)",
                services.executor.owner,
                settings.max_concurrent_runs,
            )
            if ready is not None:
                ready.set()
            await stop.wait()
            log.info("worker stopping")
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
