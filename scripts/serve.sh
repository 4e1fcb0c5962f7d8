#!/usr/bin/env bash
# Run Threadline on the embedded default (SQLite in ./.threadline, no other server) from a fresh clone.
# The first run creates the database and prints the keys and the owner login, once; later runs just serve.
# Options go to `threadline serve` (`bash scripts/serve.sh --port 9000`).
#
# A later start is one Python process, `threadline serve`: pip runs only when what it installs changed
# (a stamp in .venv holds the digest of the lockfile and the project files), and the database is migrated
# only when the migrations changed (a stamp beside the database). pip alone took about 11 s a start.
set -euo pipefail
cd "$(dirname "$0")/.."

digest() {  # the SHA-256 of the files named, as one value
  if command -v sha256sum >/dev/null; then cat "$@" | sha256sum | cut -d' ' -f1; else cat "$@" | shasum -a 256 | cut -d' ' -f1; fi
}

[ -x .venv/bin/python ] || python3 -m venv .venv
installed=.venv/.threadline-installed
projects=(requirements.lock pyproject.toml)
[ -f client/pyproject.toml ] && projects+=(client/pyproject.toml)
wanted=$(digest "${projects[@]}")
if [ "$(cat "$installed" 2>/dev/null)" != "$wanted" ]; then
  pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" -r requirements.lock
  if [ -f client/pyproject.toml ]; then
    "${pip[@]}" --no-deps -e ./client
  fi
  "${pip[@]}" --no-deps -e .
  echo "$wanted" >"$installed"
fi

# THREADLINE_DATABASE_URL (another database than the embedded one): migrate and check at every start.
data_dir=${THREADLINE_DATA_DIR:-.threadline}
migrated="$data_dir/.threadline-migrated"
schema=$(digest threadline/storage/migrations/versions/*.py)
if [ -n "${THREADLINE_DATABASE_URL:-}" ] || [ ! -f "$data_dir/threadline.db" ] \
  || [ "$(cat "$migrated" 2>/dev/null)" != "$schema" ]; then
  # Quiet unless it fails: its progress lines are for an operator at a terminal, not for every start.
  if ! out=$(.venv/bin/threadline migrate 2>&1); then echo "$out" >&2; exit 1; fi
  if [ -z "$(.venv/bin/threadline orgs list --json | tr -d '[:space:][]')" ]; then
    .venv/bin/threadline init
    echo
    echo "The command line is .venv/bin/threadline: in another terminal, in $PWD, run"
    echo "  . .venv/bin/activate && export THREADLINE_API_KEY=<the secret key above>"
    echo "then \`threadline --help\`. The README's \"First requests\" go on from here."
    echo
  fi
  [ -n "${THREADLINE_DATABASE_URL:-}" ] || echo "$schema" >"$migrated"
fi
exec .venv/bin/threadline serve "$@"
