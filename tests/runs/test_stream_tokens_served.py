"""Stream tokens through a real ``threadline serve`` with its access log on: minted by the Python client
and the CLI, used in URLs, and never written to the server's output (the log shows ``token=[redacted]``)."""

from __future__ import annotations

import json

import httpx
from threadline_client import Threadline

from tests.conftest import Backend
from tests.runs.helpers import DONE, parse_sse
from tests.support import Tenant, running_server, threadline
from threadline.config import Settings


def test_tokens_minted_by_client_and_cli_never_reach_the_log(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    # The server executes runs itself in both shapes (no `threadline worker`).
    env = {**backend.env(settings), "THREADLINE_ACCESS_LOG": "true", "THREADLINE_RUN_EXECUTION": "server"}
    with running_server(env, startup_timeout=90) as server:
        with Threadline(api_key=tenant.created.secret_value, base_url=f"{server.api_url}/v1") as client:
            thread = client.threads.create(title="tokens").to_dict()
            run = client.runs.create(thread["id"], input="#notools #chunks=4").to_dict()
            for_run = client.runs.create_stream_token(
                run["id"], ttl_seconds=120, origins=["https://a.example"]
            ).to_dict()
            for_thread = client.threads.create_stream_token(thread["id"]).to_dict()
        assert for_run["runId"] == run["id"] and for_run["token"].startswith("st_")
        assert for_thread["threadId"] == thread["id"]
        cli_env = {
            **env,
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        printed = threadline("runs", "stream-token", run["id"], "--ttl", "60", env=cli_env)
        from_cli = printed.stdout.strip()
        assert from_cli.startswith("st_") and "expires" in printed.stderr
        as_json = json.loads(threadline("runs", "stream-token", run["id"], "--json", env=cli_env).stdout)
        assert as_json["runId"] == run["id"]

        tokens = [for_run["token"], for_thread["token"], from_cli, as_json["token"]]
        with httpx.Client(base_url=server.api_url, timeout=30) as http:
            stream = f"/v1/runs/{run['id']}/stream"
            for token in (for_run["token"], from_cli, as_json["token"]):
                events = parse_sse(http.get(stream, params={"token": token}).text)
                assert events[-1] == DONE and events[-2]["type"] == "run_completed"
            thread_stream = f"/v1/threads/{thread['id']}/stream?token={for_thread['token']}"
            events = parse_sse(http.get(thread_stream).text)
            assert events[-1] == DONE
            # Refusals too: another endpoint, an origin the token does not allow.
            assert http.get(f"/v1/runs/{run['id']}", params={"token": from_cli}).status_code == 401
            refused = http.get(
                stream, params={"token": for_run["token"]}, headers={"origin": "https://b.example"}
            )
            assert refused.status_code == 403
        output = server.log()
        assert "stream?token=[redacted]" in output  # the access log is on and wrote the requests
        for token in tokens:
            assert token not in output and token[3:] not in output
