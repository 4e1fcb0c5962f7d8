"""A PostgreSQL and a Redis of the test's own, on loopback ports of their own, which a test may stop, kill
and restart without disturbing the machine's shared servers (or the other engineers' tests)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.support import free_port

_NOTHING_KEPT = ("--save", "", "--appendonly", "no")  # a restart starts empty, as after a crash
_PG_BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def unavailable(reason: str) -> None:
    """Skip, or fail where the services are required (``THREADLINE_TEST_REQUIRE_SERVICES=1``, as in CI)."""
    if REQUIRE_SERVICES:
        pytest.fail(f"fault injection required but impossible: {reason}")
    pytest.skip(reason)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class OwnRedis:
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", *_NOTHING_KEPT],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _answers(self.port):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.01)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@contextmanager
def own_redis() -> Iterator[OwnRedis]:
    if shutil.which("redis-server") is None:
        unavailable("redis-server is not installed")
    redis = OwnRedis(free_port())
    redis.start()
    try:
        yield redis
    finally:
        if redis.process is not None and redis.process.poll() is None:
            redis.kill()


@dataclass
class OwnPostgres:
    """A cluster of its own (initdb), run as the ``postgres`` user when the test runs as root (the server
    refuses to run as root)."""

    root: Path
    port: int
    binaries: str
    as_postgres: bool

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [f"{self.binaries}/{args[0]}", *args[1:]]
        if self.as_postgres:
            command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{part}'" for part in command)]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def _options(self) -> str:
        return f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"

    def init(self) -> None:
        self._run("initdb", "-D", f"{self.root}/data", "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        data, log = f"{self.root}/data", f"{self.root}/log"
        self._run("pg_ctl", "-D", data, "-o", self._options(), "-l", log, "-w", "start")

    def stop(self, mode: str = "fast", *, wait: bool = True) -> None:
        self._run("pg_ctl", "-D", f"{self.root}/data", "-m", mode, "-w" if wait else "-W", "stop")


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    if not _PG_BINARIES:
        unavailable("no PostgreSQL server binaries in /usr/lib/postgresql")
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="threadline-own-pg-"))
    if as_postgres:
        shutil.chown(root, "postgres")
    postgres = OwnPostgres(root, free_port(), _PG_BINARIES[-1], as_postgres)
    try:
        postgres.init()
        postgres.start()
        yield postgres
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            postgres.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
