"""kit.db on PostgreSQL: a connect whose caller is cancelled halfway leaves nothing for asyncio to report."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Any

import pytest
import sqlalchemy as sa

from threadline.kit.db import Database
from threadline.runtime import Services


@pytest.mark.distributed
async def test_a_connect_cancelled_at_any_step_leaves_no_lost_exception(services: Services) -> None:
    """A task stopped while the pool opens a connection for it (a background chore at shutdown): asyncpg
    cancelled halfway leaves a ``ConnectionError`` in a future nobody retrieves, which asyncio reports as
    "Future exception was never retrieved" once it is collected. Cancelled after each turn of the loop in
    a fresh pool's first connect, nothing is reported."""
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        for turns in range(12):
            db = Database(services.settings.resolved_database_url)

            async def select_one(db: Database = db) -> None:
                async with db.transaction(write=False) as conn:
                    await conn.execute(sa.text("SELECT 1"))

            reading = asyncio.ensure_future(select_one())
            for _ in range(turns):
                await asyncio.sleep(0)
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            for _ in range(5):  # the closed transport tells its protocol
                await asyncio.sleep(0)
            await db.dispose()
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [context["message"] for context in reported] == []
