"""``threadline worker``: executes queued runs (the distributed shape), until SIGTERM or Ctrl-C.

Workers share nothing but the database and Redis: each claims runs with ``FOR UPDATE SKIP LOCKED``,
publishes their events through Redis (every API process streams them), and ends the runs of workers that
died (lease expiry). Stopping one ends the runs it was executing ``failed`` (``EXECUTOR_STOPPED``) rather
than leaving them running. Workers run the background chores too (``threadline.chores``), so a deployment
needs no ``serve`` for retention and search postings. With ``--metrics-port``, a worker answers
``GET /metrics`` there (``threadline.metrics_endpoint``): it has no other HTTP port to answer it on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from threadline.config import Settings
from threadline.metrics_endpoint import metrics_app
from threadline.runtime import open_services
from threadline.server import Listener, side_server

log = logging.getLogger(__name__)


async def work(
    settings: Settings, ready: asyncio.Event | None = None, metrics: Listener | None = None
) -> None:
    """``metrics``: where to answer ``GET /metrics`` (ignored, with a warning, when metrics are off)."""
    if metrics is not None and not settings.metrics:
        log.warning("THREADLINE_METRICS is false: --metrics-port is ignored")
        metrics = None
    sock = metrics.bind("metrics endpoint") if metrics is not None else None
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
            serving = None
            if metrics is not None and sock is not None:
                app = metrics_app(services)
                server = side_server(app, metrics, settings, [f"metrics at {metrics.url('/metrics')}"])
                serving = asyncio.create_task(server.serve(sockets=[sock]), name="metrics-server")
            if ready is not None:
                ready.set()
            await stop.wait()
            log.info("worker stopping")
            if serving is not None:
                server.should_exit = True
                with contextlib.suppress(asyncio.CancelledError):
                    await serving
    finally:
        if sock is not None:
            sock.close()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
