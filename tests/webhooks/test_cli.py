"""``threadline webhooks add|list|deliveries|test|remove`` against a served API (the commands go through the
client, so one shape shows them)."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import Backend
from tests.support import Tenant, running_server, threadline
from tests.webhooks.conftest import KEY
from tests.webhooks.receiver import Receiver, verified
from threadline.config import Settings


@pytest.mark.embedded
def test_webhooks_commands(backend: Backend, settings: Settings, tenant: Tenant, receiver: Receiver) -> None:
    env = {**backend.env(settings), "THREADLINE_EGRESS_ALLOW": "127.0.0.1", "THREADLINE_ENCRYPTION_KEY": KEY}
    path = f"/cli-{tenant.org_id}"
    with running_server(env) as server:
        env = {
            **env,
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        added = threadline(
            "webhooks", "add", receiver.url + path, "--event", "run.failed", "--description", "ops", env=env
        )
        webhook_id, _events, url, description = added.stdout.splitlines()[0].split()
        secret = added.stdout.splitlines()[1].split()[1]
        assert (webhook_id[:4], url, description, secret[:6]) == (
            "whk_",
            receiver.url + path,
            "ops",
            "whsec_",
        )
        listed = json.loads(threadline("webhooks", "list", "--json", env=env).stdout)
        assert [(w["id"], w["events"]) for w in listed] == [(webhook_id, ["run.failed"])]
        assert "queued evt_" in threadline("webhooks", "test", webhook_id, env=env).stdout
        [received] = receiver.wait_for(path)
        assert verified(secret, received)["type"] == "webhook.test"
        deadline = time.monotonic() + 15
        while "succeeded" not in (shown := threadline("webhooks", "deliveries", webhook_id, env=env).stdout):
            assert time.monotonic() < deadline, shown
        assert "webhook.test" in shown and "#1" in shown and "200" in shown
        assert threadline("webhooks", "remove", webhook_id, env=env).stdout.startswith(
            f"removed {webhook_id}"
        )
        assert json.loads(threadline("webhooks", "list", "--json", env=env).stdout) == []
