"""The webhook tests' app allows 127.0.0.1 (where the receiver listens), seals with a key of its own (the
distributed shape has no key file) and reads a clock the tests move. One receiver serves the module.

The module has a database of its own: its dispatcher sends every due delivery in the database, whoever made
it, so in the session's database it would first work through what the rest of the suite left behind
(deliveries to dead or unreachable endpoints, sealed under other keys), and under a loaded CI machine that
backlog outlasted the tests' waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.conftest import Backend, empty_database, partitions_ahead
from tests.webhooks.receiver import Receiver, receiving
from threadline.config import Settings
from threadline.kit.clock import ManualClock
from threadline.kit.encryption import generate_key
from threadline.runtime import Services
from threadline.storage.migrate import upgrade

KEY = generate_key()


@pytest.fixture(scope="module")
async def own_database(backend: Backend, storage_root: Path) -> AsyncIterator[Settings]:
    async with empty_database(backend, storage_root) as empty:
        settings = empty.model_copy(update={"run_execution": backend.settings.run_execution})
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        if backend.name == "distributed":
            await partitions_ahead(settings)
        yield settings


@pytest.fixture
async def settings(backend: Backend, own_database: Settings) -> Settings:
    return own_database.model_copy(
        update={
            "redis_prefix": backend.fresh().redis_prefix,
            "egress_allow": "127.0.0.1",
            "encryption_key": SecretStr(KEY),
        }
    )


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with receiving() as running:
        yield running


@pytest.fixture
def clock(services: Services) -> ManualClock:
    """What the API and the dispatcher read the time from. Receivers check a signature's timestamp against
    their own clock (5 minutes' tolerance either way), so it starts 4 minutes back: a test can move it
    through the first two retries (5 s, then 5 min) and every attempt still verifies."""
    manual = ManualClock(datetime.now(UTC) - timedelta(minutes=4))
    services.clock = manual
    assert services.webhooks is not None
    services.webhooks.clock = manual
    return manual
