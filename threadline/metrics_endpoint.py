"""``GET /metrics``: the process's Prometheus exposition (``kit.metrics``), on the API's port and on the
``--metrics-port`` of ``threadline worker`` and ``threadline serve-intake``.

Who may read it: whoever can reach it, unless ``THREADLINE_METRICS_TOKEN`` is set, and then only a scrape
that sends ``Authorization: Bearer <token>`` (Prometheus's ``authorization`` scrape setting). It holds no
tenant's data (labels are closed sets: ``kit.metrics``), so, as ``/healthz``, it is open by default for the
scraper on the operator's network; a deployment whose API port faces the internet sets the token or keeps
``/metrics`` off its proxy. ``THREADLINE_METRICS=false`` removes it (and the counting) altogether.

Most figures are counted as things happen. The run gauges are the database's (runs queued and running
across the deployment), read at the scrape: one indexed count, and never two at once (scrapes that arrive
while one counts share its result), so a storm of scrapes costs the database one query at a time. With the
database down the scrape still answers, with the last counts: an outage is when the rest of the exposition
matters most.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Protocol

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from threadline.config import Settings
from threadline.kit.db import Database
from threadline.kit.errors import Unauthorized, error_response
from threadline.kit.faults import dependency_of
from threadline.kit.metrics import REGISTRY, RUNS
from threadline.kit.services import Runtime, ServicesOf
from threadline.runs.repository import RunsAcrossOrganizations

log = logging.getLogger(__name__)

OPERATION_ID = "metrics.get"


class MetricsServices(Protocol):
    """What a scrape reads from the process's services."""

    settings: Settings
    db: Database


class MetricsEndpoint:
    """``scrape`` answers the request, for FastAPI (the API app) and Starlette (a worker's port) alike."""

    def __init__(self, runtime: ServicesOf[MetricsServices]) -> None:
        self.runtime = runtime
        self._counting: asyncio.Future[None] | None = None

    async def scrape(self, request: Request) -> Response:
        services = self.runtime.services
        token = services.settings.metrics_token
        if token is not None and not _bearer_matches(
            request.headers.get("authorization"), token.get_secret_value()
        ):
            refused = Unauthorized(
                "Scraping /metrics takes the token of THREADLINE_METRICS_TOKEN as a bearer token.",
                missing_context=["Authorization"],
            )
            return error_response(refused, OPERATION_ID, None)
        await self._refresh(services)
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    async def _refresh(self, services: MetricsServices) -> None:
        if self._counting is None:
            self._counting = asyncio.ensure_future(self._count(services))
            self._counting.add_done_callback(self._counted)
        await asyncio.shield(self._counting)

    def _counted(self, _done: object) -> None:
        self._counting = None

    async def _count(self, services: MetricsServices) -> None:
        try:
            async with services.db.transaction(write=False) as conn:
                counts = await RunsAcrossOrganizations(conn).count_active()
        except Exception as exc:
            if dependency_of(exc) is None:
                raise
            log.warning(
                "metrics: the run gauges keep their last values, the database is unreachable: %s",
                type(exc).__name__,
            )
            return
        for status, count in counts.items():
            RUNS.labels(status).set(count)


def metrics_app(services: MetricsServices) -> Starlette:
    """``GET /metrics`` alone, for a port of its own (a worker's or ``serve-intake``'s ``--metrics-port``)."""
    runtime: Runtime[MetricsServices] = Runtime()
    runtime.services = services
    return Starlette(routes=[Route("/metrics", MetricsEndpoint(runtime).scrape, methods=["GET"])])


def _bearer_matches(header: str | None, token: str) -> bool:
    scheme, _, value = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())
