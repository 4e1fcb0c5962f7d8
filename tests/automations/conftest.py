"""The automation tests' app runs on a ``ManualClock``: schedules are stepped through hours without
sleeping, and the scheduler's background loop sees the same (frozen) time as the test.

Each test's automations are deleted after it, and the runs they started that have not ended are
cancelled: the database is shared by the session, and schedules left behind (due at the manual clock's
times, long past on the real one) or queued runs would be fired and executed by every later test's server,
loading the machine with runs nobody asked for."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI

from tests.automations.helpers import leave_nothing_behind
from threadline.app import create_app
from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.kit.clock import ManualClock
from threadline.runtime import open_services

START = datetime(2026, 11, 21, 9, 59, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[FastAPI]:
    async with open_services(settings, clock=clock) as services:
        application = create_app(settings, services)
        async with application.router.lifespan_context(application):
            yield application
        await leave_nothing_behind(services)


@pytest.fixture
async def intake(app: FastAPI, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    intake_app = create_intake_app(settings, app.state.runtime.services)
    async with intake_app.router.lifespan_context(intake_app):
        transport = httpx.ASGITransport(app=intake_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://intake") as http:
            yield http
