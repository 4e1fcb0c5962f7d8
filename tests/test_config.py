"""Database URLs as operators write them: each reaches the driver Threadline uses for it."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from threadline.config import Settings, default_max_connections, normalize_database_url
from threadline.kit.db import Database


@pytest.mark.parametrize(
    ("given", "resolved"),
    [
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("sqlite:////var/lib/threadline.db", "sqlite:////var/lib/threadline.db"),
        ("sqlite+aiosqlite:////var/lib/threadline.db", "sqlite:////var/lib/threadline.db"),
    ],
)
def test_normalize_database_url(given: str, resolved: str) -> None:
    assert normalize_database_url(given) == resolved


def test_embedded_default_is_a_file_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=None, redis_url=None)
    assert settings.resolved_database_url == f"sqlite:///{(tmp_path / 'threadline.db').resolve()}"
    assert settings.is_sqlite


async def test_old_aiosqlite_url_opens_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "threadline.db"
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite+aiosqlite:///{path}", redis_url=None)
    db = Database(settings.resolved_database_url)
    try:
        await db.ping()
        assert db.sqlite_path == path
        assert path.exists()
    finally:
        await db.dispose()


@pytest.mark.parametrize(
    ("soft", "expected"),
    [(256, 96), (1024, 448), (20_000, 8750), (1_000_000, 20_000), (resource.RLIM_INFINITY, 20_000)],
)
def test_max_connections_follows_the_open_file_limit(
    soft: int, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of the two listeners gets half of the open-file limit less an eighth (at least 64) of
    headroom, at most 20,000: the 503 comes before the descriptors run out."""
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (soft, resource.RLIM_INFINITY))
    monkeypatch.delenv("THREADLINE_MAX_CONNECTIONS", raising=False)
    assert default_max_connections() == expected
    assert Settings().max_connections == expected
