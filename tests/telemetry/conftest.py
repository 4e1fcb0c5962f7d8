"""Fixtures of the telemetry tests (the intake app, ``intake``, is the root conftest's).

On the embedded shape the intake's tests run with each of SQLite's two append paths
(``THREADLINE_LOG_STORE``): ``process``, the store process, and ``inline``, every append in the server.
PostgreSQL has one path; its ``inline`` variants are deselected, not skipped. A module where the path
makes no difference (reads, auth) pins ``log_store`` to ``process`` with a fixture of its own."""

from __future__ import annotations

import pytest

from tests.conftest import Backend
from threadline.config import Settings


@pytest.fixture(params=["process", "inline"])
def log_store(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
async def settings(backend: Backend, log_store: str) -> Settings:
    return backend.fresh().model_copy(update={"log_store": log_store})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselects the distributed shape's ``inline`` variants (of these tests only: no other test has a
    ``log_store`` parameter)."""
    selected, deselected = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        other_path = params.get("backend") == "distributed" and params.get("log_store") == "inline"
        (deselected if other_path else selected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
