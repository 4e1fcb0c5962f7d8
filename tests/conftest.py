"""Fixtures shared by every test. Each test runs against both storage shapes:

* ``embedded``: SQLite in a temporary directory, in-process rate limits and signals;
* ``distributed``: a fresh PostgreSQL database and a private Redis key prefix.

Neither shape waits for the disk: commits are durable against a crash of the machine, which no test makes,
and a flush to disk costs ~10 ms here, a few seconds for some tests. SQLite files live on a memory file
system (``/dev/shm``, where ``synchronous=FULL`` costs nothing), and each PostgreSQL database made here
commits with ``synchronous_commit=off`` (a committed transaction survives its client's death either way,
which is what the durability tests kill).

Passwords hashed in this process (``make_member``, the in-process apps' sign-ins) use a cheap argon2id
(``CHEAP_HASHER``): the production cost, 0.1 s of CPU a hash, was paid by every signed-in test. Servers the
tests start as processes keep the production hasher, and tests/users proves what that one is.

The distributed shape needs PostgreSQL and Redis on 127.0.0.1. Without them its tests are skipped, unless
``THREADLINE_TEST_REQUIRE_SERVICES=1`` (as ``.ci/run`` sets), in which case they fail.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from pydantic import SecretStr
from redis.asyncio import Redis

from tests.support import Tenant, make_tenant
from threadline.app import create_app
from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.kit.db import Database
from threadline.runtime import Services
from threadline.storage.migrate import upgrade
from threadline.telemetry.partitions import DAYS_AHEAD, create_partition
from threadline.users.service import use_hasher

REQUIRE_SERVICES = os.environ.get("THREADLINE_TEST_REQUIRE_SERVICES") == "1"
POSTGRES_URL = os.environ.get("THREADLINE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("THREADLINE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
_counter = itertools.count()
MEMORY = Path("/dev/shm")  # noqa: S108 (only ever a private mkdtemp inside it)
# argon2id at its smallest cost (one pass over 8 KiB): a hash in microseconds, still a real argon2id hash.
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


def pytest_configure(config: pytest.Config) -> None:
    use_hasher(CHEAP_HASHER)


@pytest.fixture(scope="session")
def storage_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the shapes keep their files: a directory of this session's own on ``/dev/shm`` when there is
    one (removed at the end: memory is not the place to keep old runs), else pytest's temporary tree."""
    if not (MEMORY.is_dir() and os.access(MEMORY, os.W_OK)):
        yield tmp_path_factory.mktemp("storage")
        return
    root = Path(tempfile.mkdtemp(prefix="threadline-tests-", dir=MEMORY))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def storage_dir(root: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))


async def create_database(admin: asyncpg.Connection, name: str) -> None:
    """A new, empty PostgreSQL database whose commits do not wait for the disk (see above)."""
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')


@dataclass(frozen=True)
class Backend:
    name: str
    settings: Settings

    def fresh(self) -> Settings:
        """The shape's settings with a Redis prefix of the test's own, so rate-limit budgets never leak."""
        return self.settings.model_copy(
            update={"redis_prefix": f"{self.settings.redis_prefix}{next(_counter)}:"}
        )

    def env(self, settings: Settings | None = None) -> dict[str, str]:
        """The environment a subprocess needs to run on this shape."""
        settings = settings or self.settings
        env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
        env["THREADLINE_DATA_DIR"] = str(settings.data_dir)
        if settings.database_url is not None:
            env["THREADLINE_DATABASE_URL"] = settings.database_url.get_secret_value()
        if settings.redis_url is not None:
            env["THREADLINE_REDIS_URL"] = settings.redis_url.get_secret_value()
            env["THREADLINE_REDIS_PREFIX"] = settings.redis_prefix
        return env


async def _unreachable() -> str | None:
    try:
        conn = await asyncio.wait_for(asyncpg.connect(POSTGRES_URL), timeout=5)
        await conn.close()
    except Exception as exc:
        return f"PostgreSQL at {POSTGRES_URL}: {exc!r}"
    redis = Redis.from_url(REDIS_URL)
    try:
        await asyncio.wait_for(redis.ping(), timeout=5)
    except Exception as exc:
        return f"Redis at {REDIS_URL}: {exc!r}"
    finally:
        await redis.aclose()
    return None


async def require_distributed() -> None:
    problem = await _unreachable()
    if problem is not None:
        if REQUIRE_SERVICES:
            pytest.fail(f"distributed shape required but unreachable: {problem}")
        pytest.skip(f"distributed shape unavailable: {problem}")


@pytest.fixture(scope="session", params=["embedded", "distributed"])
async def backend(request: pytest.FixtureRequest, storage_root: Path) -> AsyncIterator[Backend]:
    data_dir = storage_dir(storage_root, request.param)
    if request.param == "embedded":
        settings = Settings(data_dir=data_dir, database_url=None, redis_url=None)
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        yield Backend("embedded", settings)
        return
    await require_distributed()
    token = secrets.token_hex(4)
    name = f"threadline_test_{token}"
    admin = await asyncpg.connect(POSTGRES_URL)
    await create_database(admin, name)
    database_url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    # The test's app executes runs itself (a worker's code path: claims in PostgreSQL, events over Redis);
    # tests/runs/test_distributed.py runs real `threadline worker` processes.
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        redis_url=REDIS_URL,
        redis_prefix=f"tltest:{token}:",
        run_execution="server",
    )
    try:
        await asyncio.to_thread(upgrade, settings.resolved_database_url)
        await partitions_ahead(settings)
        yield Backend("distributed", settings)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
        redis = Redis.from_url(REDIS_URL)
        keys = [k async for k in redis.scan_iter(match=f"tltest:{token}:*", count=1000)]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


async def partitions_ahead(settings: Settings) -> None:
    """Today's and the next days' log partitions, as a deployment's first housekeeping makes them: records
    the in-process apps write would otherwise land in the default partition, and a served process's
    housekeeping would then warn that it cannot make that day's partition (a line ``test_serve`` forbids)."""
    db = Database(settings.resolved_database_url)
    try:
        today = datetime.now(UTC).date()
        for offset in range(DAYS_AHEAD + 1):
            assert await create_partition(db, today + timedelta(days=offset))
    finally:
        await db.dispose()


@pytest.fixture
async def settings(backend: Backend) -> Settings:
    return backend.fresh()


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings, chores=False)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
def services(app: FastAPI) -> Services:
    services: Services = app.state.runtime.services
    return services


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield http


@pytest.fixture
async def intake(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """The intake app, on the same services as the API app (``client``)."""
    app = create_intake_app(settings, services)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://intake") as http:
            yield http


@pytest.fixture
async def tenant(services: Services) -> Tenant:
    return await make_tenant(services, "acme")


@pytest.fixture
async def other_tenant(services: Services) -> Tenant:
    return await make_tenant(services, "globex")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``distributed`` only make sense on PostgreSQL + Redis (several processes sharing state),
    tests marked ``embedded`` only on SQLite (its query plans): the other shape's variants are deselected
    rather than skipped, so a skip in CI always means trouble."""
    selected, deselected = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        shape = params.params.get("backend") if params is not None else None
        other = {"embedded": "distributed", "distributed": "embedded"}.get(str(shape))
        (deselected if other is not None and item.get_closest_marker(other) else selected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


@asynccontextmanager
async def empty_database(backend: Backend, root: Path) -> AsyncIterator[Settings]:
    """Settings of the current shape for a brand-new, empty database of their own (dropped afterwards)."""
    data_dir = storage_dir(root, "empty")
    if backend.name == "embedded":
        yield Settings(data_dir=data_dir, database_url=None, redis_url=None)
        return
    name = f"threadline_empty_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(POSTGRES_URL)
    await create_database(admin, name)
    try:
        # Made anew, not copied from the shape's settings: a copy would carry their cached
        # ``resolved_database_url``, the shape's own database.
        fresh = backend.fresh()
        yield Settings(
            data_dir=data_dir,
            database_url=SecretStr(POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"),
            redis_url=fresh.redis_url,
            redis_prefix=fresh.redis_prefix,
        )
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
async def empty_env(backend: Backend, storage_root: Path) -> AsyncIterator[dict[str, str]]:
    """The environment of a brand-new, empty database of the current shape (for `init`, `migrate`)."""
    async with empty_database(backend, storage_root) as settings:
        yield backend.env(settings)
