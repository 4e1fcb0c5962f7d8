"""Shared machinery for Threadline's HTTP benchmarks.

Every benchmark compares our server with a bare baseline inside one run, on one machine, alternating the
two; the helpers here exist so each benchmark script only says *what* it measures, and so that servers are
always stopped and temporary data removed, whatever happens (errors, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
STOP_TIMEOUT_SECONDS = 10.0


class BenchError(Exception):
    """A benchmark that cannot produce trustworthy numbers; reported as an error, never as a result."""


def require_wrk() -> str:
    """Fail early and clearly: without wrk nothing can be measured, and a traceback would hide why."""
    path = shutil.which("wrk")
    if path is None:
        raise SystemExit("error: wrk is not installed; install it with `apt-get install wrk` (Debian/Ubuntu)")
    return path


def interrupt_on_sigterm() -> None:
    """Treat SIGTERM like Ctrl-C, so context managers still stop servers and remove temporary data (the
    default action would kill us and orphan the servers, which run in their own sessions)."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def free_port() -> int:
    """A port the kernel just handed out; fixed ports collide with other servers on a shared machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(prefix: str = "THREADLINE_", **extra: str) -> dict[str, str]:
    """The caller's environment without ``prefix*`` variables, so a developer's own settings (database,
    Redis, limits) cannot leak into a run and make it measure something else."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(prefix)}
    env.update(extra)
    return env


def run_checked(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = 120.0, cwd: Path | None = None
) -> str:
    """Run a set-up command; its stderr is the only useful diagnostic when it fails, so show it."""
    done = subprocess.run(list(argv), env=dict(env), capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if done.returncode != 0:
        raise BenchError(
            f"`{' '.join(argv)}` exited with {done.returncode}:\n{done.stderr.strip() or done.stdout.strip()}"
        )
    return done.stdout


@dataclass
class Server:
    """A process under test and where its output went, so failures can show what the server said."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def problems(self) -> list[str]:
        """Log lines that say the server misbehaved while answering 2xx: wrk alone would not notice."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [line for line in lines if "Traceback" in line or " ERROR " in line or " CRITICAL " in line]

    def ensure_running(self) -> None:
        """A server that died mid-run turns wrk's numbers into measurements of connection errors."""
        code = self.process.poll()
        if code is not None:
            raise BenchError(f"{self.name} exited with {code}; last log lines:\n{self.log_tail()}")


def stop_process(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """SIGTERM first so servers shut down gracefully; SIGKILL if they hang, or if we are interrupted while
    waiting, because leaving a server behind on a shared machine is worse than an unclean stop."""
    if process.poll() is not None:
        return
    try:
        process.terminate()
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise


def wait_ready(
    server: Server, url: str, timeout: float = 30.0, headers: Mapping[str, str] | None = None
) -> None:
    """Poll until ``url`` answers 200. The process is checked on every attempt: if it failed to bind, some
    other server may be answering on that port, and we must not benchmark that one."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            server.ensure_running()
            try:
                response = client.get(url, headers=dict(headers or {}))
                if response.status_code == 200:
                    server.ensure_running()
                    return
                last = f"HTTP {response.status_code}"
            except httpx.TransportError as error:
                last = str(error) or type(error).__name__
            time.sleep(0.1)
    raise BenchError(f"{server.name} not ready at {url} after {timeout:.0f} s ({last}):\n{server.log_tail()}")


@contextmanager
def running_server(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    ready_url: str,
    log_dir: Path,
    ready_headers: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[Server]:
    """Start a server, wait for readiness, and stop it on the way out, whatever the exit path.

    The child gets its own session so a terminal Ctrl-C reaches only us; we then stop it deliberately
    (SIGTERM, then SIGKILL) instead of racing its own signal handling."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            list(argv), env=dict(env), cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(name, process, log_path)
    try:
        wait_ready(server, ready_url, headers=ready_headers)
        yield server
    finally:
        stop_process(process)


@dataclass(frozen=True)
class WrkResult:
    requests_per_sec: float
    p99_ms: float
    requests: int
    non_2xx_3xx: int
    socket_errors: dict[str, int]


_TIME_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)\s*$", re.MULTILINE)
_P99 = re.compile(r"^\s*99(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)\s*$", re.MULTILINE)
_REQUESTS = re.compile(r"^\s*(\d+) requests in ", re.MULTILINE)
_NON_2XX = re.compile(r"^\s*Non-2xx or 3xx responses:\s+(\d+)\s*$", re.MULTILINE)
_SOCKET_ERRORS = re.compile(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.MULTILINE
)


# The same server stack `threadline serve` runs on, so a baseline differs from us only in the app; that
# includes uvicorn's proxy-headers middleware, off in `threadline serve` since 2026-11-25.
UVICORN_OPTIONS = [
    "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
    "--no-proxy-headers",
]  # fmt: skip


def baseline_argv(module: str, port: int) -> list[str]:
    """A bare app of bench/ on uvicorn, one worker. --no-server-header: ours sends none either, so both
    answers carry the same framing."""
    return [
        sys.executable, "-m", "uvicorn", f"{module}:app", "--app-dir", str(BENCH_DIR),
        "--host", "127.0.0.1", "--port", str(port), *UVICORN_OPTIONS, "--no-server-header",
    ]  # fmt: skip


def parse_wrk(output: str) -> WrkResult:
    """Parse wrk's text report (``--latency`` is required for the p99 line); refuse partial reports,
    since a silently missing number would be reported as a regression or an improvement."""
    rps = _RPS.search(output)
    p99 = _P99.search(output)
    requests = _REQUESTS.search(output)
    if rps is None or p99 is None or requests is None:
        raise BenchError(f"cannot parse wrk output (was --latency passed?):\n{output}")
    non_2xx = _NON_2XX.search(output)
    sockets = _SOCKET_ERRORS.search(output)
    kinds = ("connect", "read", "write", "timeout")
    return WrkResult(
        requests_per_sec=float(rps.group(1)),
        p99_ms=float(p99.group(1)) * _TIME_UNITS_MS[p99.group(2)],
        requests=int(requests.group(1)),
        non_2xx_3xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=dict(zip(kinds, (int(g) for g in sockets.groups()), strict=True)) if sockets else {},
    )


def run_wrk(
    url: str,
    *,
    duration: float,
    connections: int,
    threads: int = 1,
    headers: Mapping[str, str] | None = None,
    script: Path | None = None,
) -> WrkResult:
    """One wrk run. Non-2xx answers fail the benchmark: a fast 401 or 429 is not a fast endpoint.

    ``script`` is a wrk Lua script (``-s``), for what the command line cannot say: another method, a body.
    """
    argv = [require_wrk(), f"-t{threads}", f"-c{connections}", f"-d{duration:g}s", "--latency"]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    if script is not None:
        argv += ["-s", str(script)]
    argv.append(url)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60)
    if done.returncode != 0:
        raise BenchError(f"wrk exited with {done.returncode}:\n{done.stderr or done.stdout}")
    result = parse_wrk(done.stdout)
    if result.non_2xx_3xx:
        raise BenchError(
            f"{result.non_2xx_3xx} of {result.requests} responses from {url} were not 2xx/3xx "
            f"(rate limited? wrong key?):\n{done.stdout}"
        )
    if result.requests == 0:
        raise BenchError(f"wrk completed no requests against {url}:\n{done.stdout}")
    return result


def lua_string(value: str) -> str:
    """A Lua string literal for ``value``: every byte outside printable ASCII, and the quote and backslash,
    as a decimal escape, so no body (JSON quotes, newlines, UTF-8) can break or alter the script."""
    out = []
    for byte in value.encode():
        char = chr(byte)
        out.append(char if 0x20 <= byte < 0x7F and char not in '"\\' else f"\\{byte:03d}")
    return '"' + "".join(out) + '"'


def wrk_request_script(method: str, body: str | None = None, headers: Mapping[str, str] | None = None) -> str:
    """A wrk Lua script sending every request with ``method``, ``body`` and ``headers``; wrk's command line
    only does GET without a body."""
    lines = [f"wrk.method = {lua_string(method)}"]
    if body is not None:
        lines.append(f"wrk.body = {lua_string(body)}")
    for name, value in (headers or {}).items():
        lines.append(f"wrk.headers[{lua_string(name)}] = {lua_string(value)}")
    return "\n".join(lines) + "\n"


def median(values: Sequence[float]) -> float:
    """Medians, not means: one round disturbed by a neighbour on a shared machine must not move the result."""
    if not values:
        raise BenchError("no measurements to summarise")
    return float(statistics.median(values))


def ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain aligned text: it reads the same in a terminal, a CI log and a pasted issue comment."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def as_json(value: Any) -> Any:
    """Dataclasses to plain dicts for results files."""
    if isinstance(value, WrkResult):
        return asdict(value)
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    return value


def run_main(
    args: Any,
    benchmark: Callable[[Any, ExitStack], Any],
    report: Callable[[Any], str],
    errors: tuple[type[BaseException], ...] = (),
) -> int:
    """The life of every benchmark script: run it with everything it starts on one exit stack (so any
    exit path stops servers and removes data), print the report, write the JSON results."""
    interrupt_on_sigterm()
    try:
        with ExitStack() as stack:
            results = benchmark(args, stack)
    except (BenchError, subprocess.SubprocessError, httpx.HTTPError, *errors) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; servers stopped and temporary data removed", file=sys.stderr)
        return 130
    print(report(results))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(as_json(results), indent=2, default=str) + "\n")
    print(f"\nresults written to {args.output}")
    return 0


@contextmanager
def postgres_database(admin_url: str, prefix: str = "run") -> Iterator[str]:
    """A database of our own, dropped on every exit path (WITH (FORCE): a server we failed to stop must not
    keep it alive). The name carries our pid so concurrent runs never collide."""
    name = f"bench_{prefix}_{os.getpid()}_{secrets.token_hex(3)}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield urlsplit(admin_url)._replace(path=f"/{name}").geturl()
    finally:
        try:
            asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        except (OSError, asyncpg.PostgresError) as error:
            print(f"warning: could not drop database {name}: {error}", file=sys.stderr)
