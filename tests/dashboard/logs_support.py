"""The intake app on the test's services, for the pages that show what it ingested (logs, overview)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.runtime import Services


@asynccontextmanager
async def open_intake(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    app = create_intake_app(settings, services)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://intake") as http:
            yield http
