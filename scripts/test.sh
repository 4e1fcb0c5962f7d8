#!/usr/bin/env bash
# The whole test suite from a fresh clone: a private virtualenv with the locked dependencies, then lint,
# types, the import layers (lint-imports; contracts in pyproject.toml) and tests, on two processes. Extra
# arguments go to pytest (`bash scripts/test.sh -k keys -x`; `-n 0` for one process, see below).
#
# Tests of the distributed shape need PostgreSQL and Redis on 127.0.0.1 (override with
# THREADLINE_TEST_POSTGRES_URL / THREADLINE_TEST_REDIS_URL). Without them those tests are skipped, unless
# THREADLINE_TEST_REQUIRE_SERVICES=1 (as CI sets), which makes them fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.lock
# The client first: the server declares it as a dependency, installed from the repository (client/).
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e ./client
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache --no-logo
# pytest runs on two processes (pytest-xdist, one per core of the 2-core machine CI runs on; fewer where
# fewer cores are usable): the suite is CPU-bound (interpreter starts, argon2, app starts), and one process
# leaves the second core idle (bench/HISTORY.md). Two at most: each worker makes its own PostgreSQL
# database, Redis prefix, data directory and browser servers, and the timing-bound tests were made to hold
# at two, not measured beyond. `--dist loadfile` is this suite's (tests/scheduling.py): a file's tests of
# one storage shape stay on one worker, the longest units first. For debugging on one process, add `-n 0`
# (or `-p no:xdist`); `--pdb` gives one process by itself. The 25 slowest tests are listed at the end, so
# the next slowdown shows in CI's output.
distributed=(-n logical --maxprocesses=2 --dist loadfile)
previous=
for arg in "$@"; do
    if [ "$arg" = -pno:xdist ] || [ "$previous $arg" = "-p no:xdist" ]; then
        distributed=()  # its options would be unknown to pytest without the plugin
    fi
    previous=$arg
done
exec .venv/bin/python -m pytest --durations=25 "${distributed[@]}" "$@"
