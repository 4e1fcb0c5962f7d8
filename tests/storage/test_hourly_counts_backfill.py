"""Migration 0020 counts what an upgraded deployment already stores: log records and runs present before
it are in the hourly counts after it, on both dialects (a database of the test's own, upgraded in two
steps)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from tests.conftest import POSTGRES_URL, Backend
from threadline.config import normalize_database_url
from threadline.kit.db import Database
from threadline.kit.ids import id_at
from threadline.provisioning import create_organization
from threadline.storage.migrate import alembic_config, upgrade
from threadline.storage.tables import log_counts, log_records, run_counts, runs, threads

AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
HOUR = int(AT.timestamp()) // 3600


@asynccontextmanager
async def own_database(backend: Backend, tmp_path: Path) -> AsyncIterator[str]:
    if backend.name == "embedded":
        yield f"sqlite+aiosqlite:///{tmp_path / 'upgraded.db'}"
        return
    name = f"threadline_test_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(POSTGRES_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield normalize_database_url(POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}")
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_the_counts_start_from_what_is_stored(backend: Backend, tmp_path: Path) -> None:
    before = ScriptDirectory.from_config(alembic_config("sqlite://")).get_revision("0020").down_revision
    assert isinstance(before, str)
    async with own_database(backend, tmp_path) as url:
        await asyncio.to_thread(upgrade, url, before)
        db = Database(url)
        try:
            async with db.transaction() as conn:
                made = await create_organization(conn, "upgraded", now=AT)
                org, project = made.organization.id, made.project.id
                records = [
                    (AT, "info"),
                    (AT + timedelta(minutes=10), "info"),
                    (AT + timedelta(minutes=20), "error"),
                    (AT + timedelta(hours=1), "info"),
                ]
                await conn.execute(
                    sa.insert(log_records),
                    [
                        {
                            "organization_id": org,
                            "id": id_at("log", int(at.timestamp() * 1000), n),
                            "received_at": at,
                            "project_id": project,
                            "kind": "log",
                            "level": level,
                            "message": "m",
                            "timestamp": at,
                            "attributes": {},
                        }
                        for n, (at, level) in enumerate(records)
                    ],
                )
                thread = {"id": "thread_backfill", "organization_id": org, "meta": {}, "search_text": ""}
                await conn.execute(sa.insert(threads), [{**thread, "created_at": AT, "updated_at": AT}])
                await conn.execute(
                    sa.insert(runs),
                    [
                        {
                            "id": f"run_backfill{n}",
                            "organization_id": org,
                            "thread_id": "thread_backfill",
                            "status": status,
                            "model": "m",
                            "meta": {},
                            "input_tokens": tokens,
                            "output_tokens": 1,
                            "created_at": AT,
                        }
                        for n, (status, tokens) in enumerate(
                            [("completed", 10), ("completed", 5), ("failed", 0)]
                        )
                    ],
                )
        finally:
            await db.dispose()
        await asyncio.to_thread(upgrade, url)
        db = Database(url)
        try:
            async with db.transaction(write=False) as conn:
                logs = (
                    await conn.execute(sa.select(log_counts.c.hour, log_counts.c.level, log_counts.c.records))
                ).all()
                counted = (
                    await conn.execute(
                        sa.select(
                            run_counts.c.hour, run_counts.c.status, run_counts.c.runs, run_counts.c.tokens
                        )
                    )
                ).all()
        finally:
            await db.dispose()
    assert sorted(map(tuple, logs)) == [(HOUR, "error", 1), (HOUR, "info", 2), (HOUR + 1, "info", 1)]
    assert sorted(map(tuple, counted)) == [(HOUR, "completed", 2, 17), (HOUR, "failed", 1, 1)]
