#!/usr/bin/env bash
# Installs the MCP servers the tests talk to besides their own Python one: the MCP project's TypeScript
# reference server, @modelcontextprotocol/server-everything, pinned by tests/mcp_servers/node/package-lock.json,
# into tests/mcp_servers/node/node_modules (needs node and npm). .ci/run runs it; it does nothing when the
# tree installed last was installed from the same lock.
set -euo pipefail
cd "$(dirname "$0")/../tests/mcp_servers/node"
stamp=node_modules/.installed-from
wanted=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
echo "$wanted" > "$stamp"
