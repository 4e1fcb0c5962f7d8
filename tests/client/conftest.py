"""One real ``threadline serve`` per test module and storage shape, for the client's real-server tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from threadline_client import Threadline

from tests.conftest import Backend
from tests.support import ServerProcess, Tenant, running_server
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.provisioning import create_organization


@dataclass(frozen=True)
class Served:
    server: ServerProcess
    db: Database

    @property
    def api_url(self) -> str:
        return f"{self.server.api_url}/v1"

    async def organization(self, name: str) -> Tenant:
        async with self.db.transaction() as conn:
            return Tenant(await create_organization(conn, name, now=Clock().now()))

    @contextmanager
    def sdk(self, tenant: Tenant) -> Iterator[Threadline]:
        with Threadline(tenant.created.secret_value, self.api_url) as client:
            yield client


@pytest.fixture(scope="module")
async def served(backend: Backend) -> AsyncIterator[Served]:
    """The module's server; it executes runs itself in both shapes (no `threadline worker`)."""
    settings = backend.fresh()
    db = Database(settings.resolved_database_url)
    try:
        with running_server({**backend.env(settings), "THREADLINE_RUN_EXECUTION": "server"}) as server:
            yield Served(server, db)
    finally:
        await db.dispose()
