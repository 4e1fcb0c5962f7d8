"""Header values at rest: neither the database's files (SQLite's, with its WAL) nor a pg_dump of PostgreSQL's
holds one, and a server's whole output (debug logs and access log on) never shows one, even while it uses
them to talk to a server and fails to reach another."""

from __future__ import annotations

import asyncio
import json
import secrets
import stat
from pathlib import Path

import httpx
import pytest

from tests.conftest import Backend
from tests.mcp_servers.helpers import register, tools_of
from tests.mcp_servers.peers import PythonPeer
from tests.support import Tenant, init_database, running_server, threadline
from threadline.config import Settings
from threadline.kit.encryption import KEY_FILE
from threadline.mcp_servers.tables import mcp_servers


async def _database_dump(backend: Backend, settings: Settings) -> bytes:
    if backend.name == "embedded":
        files = sorted(settings.data_dir.glob("threadline.db*"))
        assert files
        # Read by another process: opening and closing the files here would drop this process's POSIX
        # locks on them (which are per process, not per descriptor), and a served process closing its last
        # connection would then take itself for the last one and delete the WAL the session's database
        # still needs ("database disk image is malformed" in every later test).
        reader = await asyncio.create_subprocess_exec(
            "cat", *map(str, files), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await reader.communicate()
        assert reader.returncode == 0, err.decode()
        return out
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    process = await asyncio.create_subprocess_exec(
        "pg_dump",
        "--no-owner",
        "--dbname",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert b"mcp_servers" in out
    return out


async def test_the_database_never_holds_a_header_value(
    client: httpx.AsyncClient, tenant: Tenant, backend: Backend, settings: Settings, peer: PythonPeer
) -> None:
    value = f"Bearer at-rest-{secrets.token_hex(12)}"
    created = await register(client, tenant, url=peer.base + "/mcp", headers={"Authorization": value})
    changed = f"rotated-{secrets.token_hex(12)}"
    patched = await client.patch(
        f"/v1/mcp-servers/{created['id']}", headers=tenant.secret, json={"headers": {"X-Token": changed}}
    )
    assert patched.status_code == 200
    peer.seen_headers.clear()
    assert (await tools_of(client, tenant, created["id"])).status_code == 200
    assert peer.seen_headers[-1]["x-token"] == changed  # used, so held somewhere: sealed
    dump = await _database_dump(backend, settings)
    assert value.encode() not in dump and changed.encode() not in dump
    assert mcp_servers.name.encode() in dump or backend.name == "embedded"


@pytest.mark.embedded
def test_init_serve_and_the_cli_never_print_a_value(empty_env: dict[str, str], peer: PythonPeer) -> None:
    """One served process for `init`'s key file, the server's output and the CLI's commands (which
    register with a header and must not echo it either)."""
    env = {
        **empty_env,
        "THREADLINE_EGRESS_ALLOW": "127.0.0.1",
        "THREADLINE_LOG_LEVEL": "debug",
        "THREADLINE_ACCESS_LOG": "true",
    }
    created = init_database(env)
    key_file = Path(env["THREADLINE_DATA_DIR"]) / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    value = f"Bearer in-logs-{secrets.token_hex(12)}"
    with running_server(env) as server:
        cli = {
            **env,
            "THREADLINE_API_KEY": created["secretKey"],
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        added = threadline(
            "mcp-servers", "add", "peer", f"{peer.base}/mcp", "--header", f"X-Key: {value}", "--json", env=cli
        )
        good = json.loads(added.stdout)
        assert good["headerNames"] == ["X-Key"] and value not in added.stdout
        dead = threadline(
            "mcp-servers", "add", "dead", "http://127.0.0.1:9/mcp", "--timeout-seconds", "2",
            "--header", f"X-Key: {value}", env=cli,
        )  # fmt: skip
        dead_id = dead.stdout.split()[0]
        listed = threadline("mcp-servers", "list", env=cli).stdout.splitlines()
        assert [line.split()[0] for line in listed] == [dead_id, good["id"]]
        assert "headers: X-Key" in listed[0] and value not in "".join(listed)
        tools = threadline("mcp-servers", "tools", good["id"], env=cli).stdout
        assert "add(a, b)  Adds two integers." in tools.splitlines()
        unreachable = threadline("mcp-servers", "tools", dead_id, env=cli, check=False)
        assert unreachable.returncode == 1 and "MCP_UNREACHABLE" in unreachable.stderr
        refused = threadline("mcp-servers", "add", "meta", "http://169.254.169.254/", env=cli, check=False)
        assert refused.returncode == 1 and "EGRESS_NOT_ALLOWED" in refused.stderr
        removed = threadline("mcp-servers", "remove", dead_id, env=cli).stdout
        assert removed.startswith(f"removed {dead_id}")
        server.stop()
        output = server.log()
    assert "/v1/mcp-servers" in output  # the access log was on
    assert value not in output and key not in output
