"""Fixtures of the telemetry tests: the intake app, on the same services as the API app (``client``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.runtime import Services


@pytest.fixture
async def intake(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    app = create_intake_app(settings, services)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://intake") as http:
            yield http
