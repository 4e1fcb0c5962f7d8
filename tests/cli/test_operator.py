"""The launch contract of DESIGN.md, exercised as an operator would: real processes, real ports."""

from __future__ import annotations

import json
import signal
import time

import httpx

from tests.cli.one_process import threadline_each
from tests.support import running_server, threadline


def test_init_serve_and_client_commands(empty_env: dict[str, str]) -> None:
    result = threadline("init", "--json", env=empty_env)
    boot = json.loads(result.stdout)
    assert set(boot) == {"organization", "project", "secretKey", "publicKey", "owner"}
    assert boot["organization"]["name"] == "default" and boot["organization"]["id"].startswith("org_")
    assert boot["project"]["name"] == "default" and boot["project"]["id"].startswith("proj_")
    assert boot["secretKey"].startswith("sk_") and boot["publicKey"].startswith("pk_")
    assert boot["owner"]["email"] == "owner@localhost" and len(boot["owner"]["password"]) >= 16

    again = threadline("init", "--json", env=empty_env, check=False)
    assert again.returncode == 1
    assert "already initialised" in again.stderr and again.stdout == ""

    other = json.loads(threadline("orgs", "create", "Globex", "--json", env=empty_env).stdout)
    assert set(other) == {"organization", "project", "secretKey", "publicKey"}
    assert other["organization"]["name"] == "Globex"
    listed = json.loads(threadline("orgs", "list", "--json", env=empty_env).stdout)
    assert [o["name"] for o in listed] == ["default", "Globex"]

    with running_server(empty_env) as server:
        secret = {"Authorization": f"Bearer {boot['secretKey']}"}
        me = httpx.get(f"{server.api_url}/v1/me", headers=secret)
        assert me.status_code == 200 and me.json()["organization"]["id"] == boot["organization"]["id"]
        assert (
            httpx.get(
                f"{server.api_url}/v1/me", headers={"Authorization": f"Bearer {boot['publicKey']}"}
            ).status_code
            == 403
        )
        intake = httpx.post(f"{server.intake_url}/v1/logs", json={"message": "hi"})
        assert intake.status_code == 401 and intake.json()["missingContext"] == ["x-service-key"]
        intake = httpx.post(
            f"{server.intake_url}/v1/logs",
            json={"message": "hi"},
            headers={"x-service-key": boot["secretKey"]},
        )
        assert intake.json()["reason"] == "SECRET_KEY_NOT_ALLOWED"

        client_env = {
            **empty_env,
            "THREADLINE_API_KEY": boot["secretKey"],
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        created = json.loads(threadline("keys", "create", "--name", "ci", "--json", env=client_env).stdout)
        assert created["key"].startswith("sk_") and created["name"] == "ci"
        keys = json.loads(threadline("keys", "list", "--json", env=client_env).stdout)
        assert keys[0]["id"] == created["id"] and all("key" not in k for k in keys)
        revoked = threadline("keys", "revoke", created["id"], env=client_env)
        assert created["id"] in revoked.stdout and "revoked" in revoked.stdout
        refused = httpx.get(f"{server.api_url}/v1/me", headers={"Authorization": f"Bearer {created['key']}"})
        assert refused.status_code == 401 and refused.json()["reason"] == "KEY_REVOKED"
        missing = threadline("keys", "revoke", "key_nope", env=client_env, check=False)
        assert missing.returncode == 1 and "404 NOT_FOUND" in missing.stderr

        org_id = boot["organization"]["id"]
        threadline("orgs", "set-limit", org_id, "--requests-per-minute", "4321", env=empty_env)
        deadline = time.monotonic() + 1.0
        while httpx.get(f"{server.api_url}/v1/me", headers=secret).headers["x-ratelimit-limit"] != "4321":
            assert time.monotonic() < deadline, "set-limit not applied within 1 s"
        assert httpx.get(f"{server.api_url}/v1/settings", headers=secret).json()["runConcurrency"] == 4
        limits = ["--concurrent-runs", "7", "--requests-per-minute", "999"]
        both = threadline("orgs", "set-limit", org_id, *limits, env=empty_env)
        assert both.stdout.splitlines() == [
            f"{org_id}: 999 requests per minute",
            f"{org_id}: 7 runs executing at once",
        ]
        settings = httpx.get(f"{server.api_url}/v1/settings", headers=secret).json()
        assert settings["runConcurrency"] == 7 and settings["rateLimit"] == {"requestsPerMinute": 999}
        assert server.stop(signal.SIGTERM) == 0
    orgs = json.loads(threadline("orgs", "list", "--json", env=empty_env).stdout)
    assert orgs[0] == {
        "id": org_id,
        "name": "default",
        "requestsPerMinute": 999,
        "concurrentRuns": 7,
        "streams": 500,  # never set: the default
        "automations": 100,
        "queuedRuns": 100,
    }
    first = threadline("orgs", "list", env=empty_env).stdout.splitlines()[0]
    assert first.split() == [
        org_id,
        "999/min",
        "7",
        "runs",
        "500",
        "streams",
        "100",
        "automations",
        "default",
    ]


def test_set_limit_streams_caps_open_streams_on_a_running_server(empty_env: dict[str, str]) -> None:
    boot = json.loads(threadline("init", "--json", env=empty_env).stdout)
    org_id = boot["organization"]["id"]
    done = threadline("orgs", "set-limit", org_id, "--streams", "1", env=empty_env)
    assert done.stdout.strip() == f"{org_id}: 1 open streams per process"
    capped = threadline(
        "orgs", "set-limit", org_id, "--automations", "5", "--queued-runs", "7", env=empty_env
    )
    assert capped.stdout.splitlines() == [
        f"{org_id}: 5 automations",
        f"{org_id}: 7 queued runs before firings wait",
    ]
    listed = json.loads(threadline("orgs", "list", "--json", env=empty_env).stdout)[0]
    assert (listed["automations"], listed["queuedRuns"]) == (5, 7)
    assert threadline("orgs", "set-limit", org_id, env=empty_env, check=False).returncode == 2
    assert (
        threadline("orgs", "set-limit", org_id, "--streams", "0", env=empty_env, check=False).returncode == 2
    )
    with (
        running_server(empty_env, startup_timeout=60) as server,
        httpx.Client(base_url=server.api_url, timeout=10) as http,
    ):
        secret = {"Authorization": f"Bearer {boot['secretKey']}"}
        with http.stream("GET", "/v1/logs/stream", headers=secret) as first:
            assert first.status_code == 200
            chunks = first.iter_raw()  # kept: a dropped iterator would close the response
            assert next(chunks).startswith(b"id: ")  # the starting position: the stream is open
            refused = http.get("/v1/logs/stream", headers=secret)
            assert refused.status_code == 429 and refused.json()["reason"] == "TOO_MANY_STREAMS"
        # The client hung up: the server notices and frees the slot.
        deadline = time.monotonic() + 5.0
        while True:
            with http.stream("GET", "/v1/logs/stream", headers=secret) as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "the slot was not released within 5 s"
            time.sleep(0.05)
        assert server.stop(signal.SIGTERM) == 0


def test_operator_errors_are_clear(empty_env: dict[str, str]) -> None:
    serve, migrated, again, *limits = threadline_each(
        ("serve", "--port", "1"),
        ("migrate",),
        ("migrate",),
        ("orgs", "set-limit", "org_missing", "--requests-per-minute", "5"),
        ("orgs", "set-limit", "org_x", "--requests-per-minute", "0"),
        ("orgs", "set-limit", "org_x", "--concurrent-runs", "0"),
        ("orgs", "set-limit", "org_x"),
        ("orgs", "set-limit", "org_missing", "--concurrent-runs", "5"),
        env=empty_env,
    )
    assert serve.returncode == 2 and "threadline init" in serve.stderr  # no database: nothing to serve
    assert migrated.returncode == 0 and "up to date" in migrated.stdout
    assert again.returncode == 0 and "up to date" in again.stdout  # idempotent
    unknown, zero_requests, zero_runs, nothing, unknown_runs = limits
    assert unknown.returncode == 1 and "org_missing was not found" in unknown.stderr
    assert zero_requests.returncode == 2
    assert zero_runs.returncode == 2 and "--concurrent-runs" in zero_runs.stderr
    assert nothing.returncode == 2 and "--concurrent-runs" in nothing.stderr
    assert unknown_runs.returncode == 1 and "org_missing was not found" in unknown_runs.stderr
    client = threadline("keys", "list", env={**empty_env, "THREADLINE_API_KEY": ""}, check=False)
    assert client.returncode == 1 and "THREADLINE_API_KEY" in client.stderr


def test_ctrl_c_shuts_down_gracefully(empty_env: dict[str, str]) -> None:
    threadline("init", env=empty_env)
    with running_server(empty_env) as server:
        assert server.stop(signal.SIGINT) == 0
