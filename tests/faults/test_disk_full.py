"""The embedded shape on a disk that fills to the last byte: a small tmpfs of the test's own (mounting
needs root; elsewhere the test is skipped, saying so, or fails where the services are required). Readiness
says the service cannot write, writes are refused 503 ``DEPENDENCY_DOWN`` naming the full disk (never 500),
nothing acknowledged is lost, and writes resume by themselves once space returns."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.own_services import unavailable
from tests.support import make_tenant
from threadline.app import create_app
from threadline.config import Settings
from threadline.intake_app import create_intake_app
from threadline.runtime import Services
from threadline.storage.migrate import upgrade

pytestmark = pytest.mark.embedded

_SIZE = "24m"


@pytest.fixture(scope="module")
def small_disk() -> Iterator[Path]:
    if os.geteuid() != 0:
        unavailable("mounting a small tmpfs needs root")
    mount_point = Path(tempfile.mkdtemp(prefix="threadline-small-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        mount_point.rmdir()
        unavailable(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
        mount_point.rmdir()


def _fill(directory: Path) -> Path:
    """A file that takes every byte left (big writes, then smaller ones down to a single byte)."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as out:
        chunk = 1 << 20
        while chunk:
            try:
                out.write(b"\0" * chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                chunk //= 2
    return filler


@pytest.fixture(scope="module")
async def clients(small_disk: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, Services]]:
    settings = Settings(data_dir=small_disk / "data", database_url=None, redis_url=None)
    settings.data_dir.mkdir()
    await asyncio.to_thread(upgrade, settings.resolved_database_url)
    api = create_app(settings, chores=False)
    async with api.router.lifespan_context(api):
        intake = create_intake_app(settings, services=api.state.runtime.services)
        async with (
            intake.router.lifespan_context(intake),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://api") as api_http,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=intake), base_url="http://intake"
            ) as intake_http,
        ):
            yield api_http, intake_http, api.state.runtime.services


def _refused_for_the_disk(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["reason"] == "DEPENDENCY_DOWN", body
    assert "disk is full" in body["message"], body


async def test_a_full_disk_is_unready_and_refuses_writes_then_recovers(
    small_disk: Path, clients: tuple[httpx.AsyncClient, httpx.AsyncClient, Services]
) -> None:
    api, intake, services = clients
    tenant = await make_tenant(services, "full")
    acknowledged = 0
    for batch in range(3):
        sent = await intake.post(
            "/v1/logs", json=[{"message": f"before {batch}-{i}"} for i in range(50)], headers=tenant.public
        )
        assert sent.status_code == 202, sent.text
        acknowledged += 50
    thread_id = (await api.post("/v1/threads", json={}, headers=tenant.secret)).json()["id"]
    assert (await api.get("/readyz")).status_code == 200

    filler = await asyncio.to_thread(_fill, small_disk)
    _refused_for_the_disk(await api.get("/readyz"))
    refused_writes = 0
    for i in range(40):  # SQLite may reuse free pages for a while: write until the disk refuses
        answer = await api.post(
            f"/v1/threads/{thread_id}/messages",
            json={"content": f"{i} " + "x" * 60_000},
            headers=tenant.secret,
        )
        if answer.status_code == 201:
            continue
        _refused_for_the_disk(answer)
        refused_writes += 1
        if refused_writes == 3:
            break
    assert refused_writes == 3
    for i in range(40):
        sent = await intake.post(
            "/v1/logs",
            json=[{"message": f"full {i}-{j} " + "y" * 2000} for j in range(200)],
            headers=tenant.public,
        )
        if sent.status_code == 202:
            acknowledged += 200
            continue
        _refused_for_the_disk(sent)
        break
    else:
        pytest.fail("the intake never refused a batch on a full disk")

    filler.unlink()  # space returns: nothing to restart
    assert (await api.get("/readyz")).status_code == 200
    assert (await api.post("/v1/threads", json={}, headers=tenant.secret)).status_code == 201
    after = await intake.post("/v1/logs", json=[{"message": "after"}], headers=tenant.public)
    assert after.status_code == 202, after.text
    acknowledged += 1
    stored = 0
    cursor = None
    while True:
        page = await api.get(
            "/v1/logs", params={"limit": 100, **({"cursor": cursor} if cursor else {})}, headers=tenant.secret
        )
        assert page.status_code == 200, page.text
        stored += len(page.json()["data"])
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert stored == acknowledged
