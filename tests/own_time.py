"""A child process's own time: its wall time less the time it spent ready to run but waiting for a CPU.

Tests that bound how long a command takes ("promptly", not "after a minute of retries") mean what the
command does: its work, its waits on the network and its sleeps. On a loaded machine the wall time also
holds the time other processes had the CPU: a command that answers in about a second on an idle machine
took 51 s under the suite on two processes beside other work. Linux counts that time for each task
(``/proc/PID/schedstat``, the second field, in nanoseconds); it is read here once the child has exited and
before it is reaped, so the count is complete. Where there is no such file the wall time is used as is."""

from __future__ import annotations

import os
import select
import subprocess
import tempfile
import time
from pathlib import Path


def run_timed(
    argv: list[str], env: dict[str, str], timeout: float
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``argv`` run to its end (killed after ``timeout`` s of wall time), and its own time in seconds."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        try:
            waiting = _exited_unreaped(process, timeout)
            elapsed = time.monotonic() - started
        finally:
            process.kill()  # a no-op once it has exited (it is not reaped yet, so its pid is still its own)
            returncode = process.wait()
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(
            argv, returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace")
        )
    return result, elapsed - waiting


def _exited_unreaped(process: subprocess.Popen[bytes], timeout: float) -> float:
    """Waits until the child has exited, leaving it unreaped; the seconds it spent waiting for a CPU."""
    if not hasattr(os, "pidfd_open"):  # not Linux: wall time
        process.wait(timeout)
        return 0.0
    pidfd = os.pidfd_open(process.pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    if not ready:
        raise subprocess.TimeoutExpired(process.args, timeout)
    try:
        fields = Path(f"/proc/{process.pid}/schedstat").read_text().split()
    except OSError:
        return 0.0
    return int(fields[1]) / 1e9
