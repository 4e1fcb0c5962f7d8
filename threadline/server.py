"""Running the API and the intake on their ports, in one process and one event loop, sharing one set of
services (database pool, caches, limiter). SIGTERM and Ctrl-C stop both gracefully: listeners close,
requests in flight finish (their transactions commit before they are answered), then services close.
With the API, the process runs the background chores too (``threadline.chores``).

Every port is bound before anything else starts, so a taken port ends the command at once with one line
naming the listener and the option that moves it, rather than uvicorn's log of a half-started server.
The process then says, once, where each listener answers; uvicorn's own start and stop lines (one set per
server, so each printed twice) stay below the log level unless it is ``debug``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import signal
import socket
from dataclasses import dataclass

import uvicorn

from threadline.agent import registry
from threadline.app import create_app
from threadline.config import Settings
from threadline.http_protocol import bounded_protocol
from threadline.intake_app import create_intake_app
from threadline.metrics_endpoint import metrics_app
from threadline.runtime import RunRole, open_services

_GC_YOUNG_THRESHOLD = 20_000
_BACKLOG = 2048  # uvicorn's default
logger = logging.getLogger("threadline.server")


class ServeError(Exception):
    pass


@dataclass(frozen=True)
class Listener:
    """``option``: the command-line option that sets this listener's port, named when the port is taken."""

    host: str
    port: int
    option: str = "--port"

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    def bind(self, name: str) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            return socket.create_server((self.host, self.port), family=family, backlog=_BACKLOG)
        except OSError as error:
            raise ServeError(self._bind_problem(name, error)) from None

    def _bind_problem(self, name: str, error: OSError) -> str:
        where = f"{self.host}:{self.port}"
        if error.errno == errno.EADDRINUSE:
            return f"the {name}'s port {where} is in use (another server?): choose another with {self.option}"
        if error.errno == errno.EACCES:
            return f"the {name} may not listen on {where} (below 1024?): choose another with {self.option}"
        if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:
            return f"the {name} cannot listen on {self.host!r} ({error.strerror}): check --host"
        return f"the {name} cannot listen on {where}: {error.strerror or error}"


class _Server(uvicorn.Server):
    """uvicorn's own signal handling is per server; ours stops every server of the process at once.
    ``announce``: the lines saying where this server answers, logged once it does."""

    def __init__(self, config: uvicorn.Config, announce: list[str]) -> None:
        super().__init__(config)
        self.announce = announce
        self.serving = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def]
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            for line in self.announce:
                logger.info(line)
            self.serving.set()


def _config(app: object, listener: Listener, settings: Settings) -> uvicorn.Config:
    """``proxy_headers=False``: which client address a request has is ``THREADLINE_TRUST_FORWARDED_FOR``'s
    to decide (``keys.middleware``). uvicorn's default would take ``X-Forwarded-For`` from any peer on
    127.0.0.1 whatever that setting says, so a local proxy that passes the header through would let every
    client choose its own per-address rate-limit bucket; it also cost every request a pass over the
    headers."""
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=listener.host,
        port=listener.port,
        lifespan="on",
        ws="none",  # no WebSocket route: uvicorn's default loaded a WebSocket implementation for nothing
        access_log=settings.access_log,
        log_config=None,
        timeout_graceful_shutdown=30,
        server_header=False,
        proxy_headers=False,
        http=bounded_protocol(
            header_timeout_seconds=settings.header_timeout_seconds,
            body_timeout_seconds=settings.body_timeout_seconds,
            max_connections=settings.max_connections,
            max_header_bytes=settings.max_header_bytes,
            max_header_lines=settings.max_header_lines,
        ),
        timeout_keep_alive=settings.keep_alive_seconds,
    )


async def serve(
    settings: Settings, api: Listener | None, intake: Listener | None, metrics: Listener | None = None
) -> None:
    """``metrics``: a port of its own for ``GET /metrics`` (``serve-intake``, which has no API port)."""
    runs: RunRole = "server" if api is not None else "off"
    if metrics is not None and not settings.metrics:
        logger.warning("THREADLINE_METRICS is false: --metrics-port is ignored")
        metrics = None
    sockets: list[socket.socket] = []
    try:
        if api is not None:
            sockets.append(api.bind("API"))
        if intake is not None:
            sockets.append(intake.bind("intake"))
        if metrics is not None:
            sockets.append(metrics.bind("metrics endpoint"))
    except ServeError:
        for sock in sockets:
            sock.close()
        raise
    async with open_services(settings, runs, chores=api is not None) as services:
        servers: list[tuple[_Server, socket.socket]] = []
        if api is not None:
            intake_port = intake.port if intake is not None else None
            app = _config(create_app(settings, services, intake_port=intake_port), api, settings)
            announce = [f"API at {api.url('/v1')}", f"dashboard at {api.url('/')}"]
            servers.append((_Server(app, announce), sockets[0]))
        if intake is not None:
            app = _config(create_intake_app(settings, services), intake, settings)
            servers.append((_Server(app, [f"intake at {intake.url('/v1/logs')}"]), sockets[len(servers)]))
        if metrics is not None:
            announce = [f"metrics at {metrics.url('/metrics')}"]
            servers.append((side_server(metrics_app(services), metrics, settings, announce), sockets[-1]))

        # Everything built so far lives as long as the process. Freezing it keeps the collector from
        # re-scanning that large, permanent heap on every full collection (tens of milliseconds each).
        # Request garbage is almost all freed by reference counting; what a young collection finds
        # alive is the in-flight requests, whatever the threshold. Collecting every 20,000 allocations
        # instead of 700 does the same work far less often (measured: +3 to 4 % requests/s on /v1/me).
        gc.collect()
        gc.freeze()
        gc.set_threshold(_GC_YOUNG_THRESHOLD, 10, 10)

        def stop() -> None:
            """First signal: drain gracefully. A second one: stop waiting for open connections."""
            services.close_streams()
            draining = any(server.should_exit for server, _ in servers)
            if draining:
                logger.info("stopping now, without waiting for open connections")
            else:
                logger.info("shutting down: finishing the requests in flight (Ctrl-C again: at once)")
            for server, _ in servers:
                if server.should_exit:
                    server.force_exit = True
                server.should_exit = True

        async def run(server: _Server, sock: socket.socket) -> bool:
            try:
                await server.serve(sockets=[sock])
            except SystemExit:  # uvicorn exits this way when the application's start-up failed
                stop()
                return False
            return server.started

        async def preload() -> None:
            """What runs need but start-up does not, imported once every listener answers (in a thread,
            so that requests go on meanwhile): the first answer comes that much sooner."""
            await asyncio.gather(*(server.serving.wait() for server, _ in servers))
            await asyncio.to_thread(registry.preload)

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop)
        preloading = asyncio.create_task(preload()) if api is not None else None
        try:
            started = await asyncio.gather(*(run(server, sock) for server, sock in servers))
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
            for sock in sockets:
                sock.close()
            if preloading is not None:
                preloading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await preloading
        if not all(started):
            raise ServeError("a listener could not start (see the log above); nothing is being served")
        logger.info("stopped")


def side_server(app: object, listener: Listener, settings: Settings, announce: list[str]) -> _Server:
    """A server for a port besides the API's and the intake's (a worker's ``--metrics-port``): the same
    protocol limits, and no signal handling of its own (its process stops it)."""
    return _Server(_config(app, listener, settings), announce)
