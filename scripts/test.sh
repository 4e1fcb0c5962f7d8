#!/usr/bin/env bash
# The whole test suite from a fresh clone: a private virtualenv with the locked dependencies, then lint,
# types, the import layers (lint-imports; contracts in pyproject.toml) and tests. Extra arguments go to
# pytest (`bash scripts/test.sh -k keys -x`).
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
# The 25 slowest tests are listed at the end, so the next slowdown shows in CI's output. pytest-xdist is
# installed: `-n 2 --dist loadfile` runs the suite on two processes (a file stays on one); not the default
# until it is measured faster on a quiet machine (bench/HISTORY.md "CI time").
exec .venv/bin/python -m pytest --durations=25 "$@"
