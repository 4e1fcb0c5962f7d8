"""The MCP server tests' app allows 127.0.0.1 (where the test peers listen) and seals with a key of its own
(the distributed shape has no key file). One Python SDK peer serves the whole module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from tests.conftest import Backend
from tests.mcp_servers.peers import PythonPeer, python_peer
from threadline.config import Settings
from threadline.kit.encryption import generate_key

KEY = generate_key()


@pytest.fixture
async def settings(backend: Backend) -> Settings:
    return backend.fresh().model_copy(update={"egress_allow": "127.0.0.1", "encryption_key": SecretStr(KEY)})


@pytest.fixture(scope="module")
def peer() -> Iterator[PythonPeer]:
    with python_peer() as running:
        yield running
