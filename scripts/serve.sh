#!/usr/bin/env bash
# Run Threadline on the embedded default (SQLite in ./.threadline, no other server) from a fresh clone.
# The first run creates the database and prints the keys and the owner login, once; later runs just serve.
# Options go to `threadline serve` (`bash scripts/serve.sh --port 9000`).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
.venv/bin/threadline migrate >/dev/null
if [ -z "$(.venv/bin/threadline orgs list --json | tr -d '[:space:][]')" ]; then
  .venv/bin/threadline init
fi
exec .venv/bin/threadline serve "$@"
