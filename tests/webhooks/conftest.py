"""The webhook tests' app allows 127.0.0.1 (where the receiver listens), seals with a key of its own (the
distributed shape has no key file) and reads a clock the tests move. One receiver serves the module."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from tests.conftest import Backend
from tests.webhooks.receiver import Receiver, receiving
from threadline.config import Settings
from threadline.kit.clock import ManualClock
from threadline.kit.encryption import generate_key
from threadline.runtime import Services

KEY = generate_key()


@pytest.fixture
async def settings(backend: Backend) -> Settings:
    return backend.fresh().model_copy(update={"egress_allow": "127.0.0.1", "encryption_key": SecretStr(KEY)})


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
