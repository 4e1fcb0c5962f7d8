"""Client commands against a real server process, as a user would run them."""

from __future__ import annotations

import json

from tests.conftest import Backend
from tests.support import Tenant, running_server, threadline
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
