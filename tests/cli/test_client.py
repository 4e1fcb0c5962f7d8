"""Client commands against a real server process, as a user would run them."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import httpx

from tests.conftest import Backend
from tests.support import Tenant, running_server, threadline
from threadline.client import Threadline
from threadline.config import Settings


def test_threads_and_search_commands(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    with running_server(backend.env(settings)) as server:
        env = {
            **backend.env(settings),
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        created = json.loads(
            threadline(
                "threads",
                "create",
                "--title",
                "Checkout incident",
                "--metadata",
                "env=prod",
                "--message",
                "The deployment failed with a timeout",
                "--json",
                env=env,
            ).stdout
        )
        assert created["title"] == "Checkout incident" and created["messageCount"] == 1
        threadline("threads", "create", "--title", "Other", "--metadata", "env=staging", env=env)

        listed = json.loads(threadline("threads", "list", "--metadata", "env=prod", "--json", env=env).stdout)
        assert [t["id"] for t in listed] == [created["id"]]
        shown = json.loads(threadline("threads", "show", created["id"], "--json", env=env).stdout)
        assert [m["content"] for m in shown["messages"]] == ["The deployment failed with a timeout"]
        text = threadline("threads", "show", created["id"], env=env).stdout
        assert "Checkout incident" in text and "[user]" in text

        found = json.loads(threadline("search", "messages", "deploy", "--json", env=env).stdout)
        assert found["pagination"]["totalResults"] == 1 and "<mark>" in found["data"][0]["snippet"]
        threads = json.loads(threadline("search", "threads", "checkout", "--json", env=env).stdout)
        assert [t["id"] for t in threads["data"]] == [created["id"]]
        human = threadline("search", "messages", "timeout", env=env)
        assert "1 results" in human.stderr and created["id"] in human.stdout

        bad = threadline("search", "messages", "--", "-only", env=env, check=False)
        assert bad.returncode == 1 and "INVALID_QUERY" in bad.stderr
        malformed = threadline("threads", "create", "--metadata", "novalue", env=env, check=False)
        assert malformed.returncode == 2


def test_logs_tail_follows_new_records_live(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    """The tail prints what was committed since --since, then what arrives while it runs, in order."""
    with running_server(backend.env(settings)) as server:
        env = {
            **backend.env(settings),
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        intake = f"{server.intake_url}/v1/logs"
        sent = httpx.post(intake, json={"message": "before", "level": "error"}, headers=tenant.public)
        assert sent.status_code == 202
        since = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        tail = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "threadline",
                "logs",
                "tail",
                "--since",
                since,
                "--level",
                "warn",
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert tail.stdout is not None
            first = json.loads(tail.stdout.readline())
            assert first["message"] == "before" and first["type"] == "log_record"
            httpx.post(intake, json=[{"message": "ignored", "level": "info"}], headers=tenant.public)
            httpx.post(intake, json={"message": "after", "level": "fatal"}, headers=tenant.public)
            second = json.loads(tail.stdout.readline())
            assert second["message"] == "after" and second["id"] > first["id"]
        finally:
            tail.terminate()
            tail.wait(timeout=10)


def test_sdk_tail_resumes_from_a_cursor(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    with running_server(backend.env(settings)) as server:
        for message in ("a", "b", "c"):
            httpx.post(f"{server.intake_url}/v1/logs", json={"message": message}, headers=tenant.public)
        window = {
            "since": (datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
            "until": (datetime.now(UTC) + timedelta(milliseconds=300)).isoformat(),
        }
        with Threadline(tenant.created.secret_value, f"{server.api_url}/v1") as client:
            everything = list(client.logs.tail(**window))
            assert [r["message"] for r in everything] == ["a", "b", "c"]
            rest = list(client.logs.tail(cursor=everything[0]["cursor"], **window))
            assert [r["message"] for r in rest] == ["b", "c"]
