"""``open_services`` closes every part it opened, in order, even when one of them fails to close."""

from __future__ import annotations

import pytest

from threadline.config import Settings
from threadline.kit.db import Database
from threadline.runtime import open_services
from threadline.telemetry.writer import LogWriter


class _CloseFailed(Exception):
    pass


async def test_a_failing_close_skips_none_of_the_others(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[str] = []
    dispose, close_writer = Database.dispose, LogWriter.aclose

    async def writer_fails(self: LogWriter) -> None:
        await close_writer(self)
        closed.append("logs")
        raise _CloseFailed

    async def disposed(self: Database) -> None:
        await dispose(self)
        closed.append("db")

    monkeypatch.setattr(LogWriter, "aclose", writer_fails)
    monkeypatch.setattr(Database, "dispose", disposed)
    opened = open_services(settings, "server", chores=True)
    services = await opened.__aenter__()
    assert services.executor is not None and services.chores is not None
    await services.db.ping()
    with pytest.raises(_CloseFailed):
        await opened.__aexit__(None, None, None)
    assert closed == ["logs", "db"]  # the writer before the pool, and the pool despite the writer
