"""``client.agents`` and ``runs.create(agent_id=…)``, then the ``threadline agents`` and ``runs create
--agent`` commands, against one real server process per storage shape."""

from __future__ import annotations

import json
import os

import pytest
from threadline_client import BadRequestError, NotFoundError

from tests.client.conftest import Served
from tests.support import threadline

SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}


async def test_agents_through_the_client(served: Served) -> None:
    tenant = await served.organization("SDK agents")
    with served.sdk(tenant) as client:
        agent = client.agents.create(
            name="triage",
            instructions="Be terse.",
            tools=[{"type": "builtin", "name": "query_logs"}],
            response_format={"type": "json_schema", "name": "triage", "schema": SCHEMA},
            metadata={"team": "support"},
        )
        assert agent.id.startswith("agt_") and agent.version == 1 and agent.model is None
        assert agent.response_format == {
            "type": "json_schema",
            "name": "triage",
            "schema": SCHEMA,
            "strict": True,
        }
        second = client.agents.update(agent.id, instructions="Be brief.", model="offline/scripted")
        assert (second.version, second.instructions, second.model) == (2, "Be brief.", "offline/scripted")
        cleared = client.agents.update(agent.id, model=None)
        assert (cleared.version, cleared.model) == (3, None)
        assert [a.id for a in client.agents.list()] == [agent.id]
        assert client.agents.get(agent.id).version == 3
        assert [v.version for v in client.agents.versions(agent.id)] == [3, 2, 1]
        thread = client.threads.create(title="Tickets")
        run = client.runs.create(thread.id, input="#notools hi", agent_id=agent.id, agent_version=2)
        assert (run.agent_id, run.agent_version, run.instructions) == (agent.id, 2, "Be brief.")
        with pytest.raises(BadRequestError):
            client.agents.create(name="x", model="nope")
        deleted = client.agents.delete(agent.id)
        assert deleted.version == 3
        with pytest.raises(NotFoundError):
            client.agents.get(agent.id)
        assert client.runs.get(run.id).agent_id == agent.id


async def test_agents_through_the_cli(served: Served) -> None:
    tenant = await served.organization("CLI agents")
    env = {
        "PATH": os.environ["PATH"],
        "THREADLINE_API_KEY": tenant.created.secret_value,
        "THREADLINE_BASE_URL": served.api_url,
    }
    created = json.loads(
        threadline(
            "agents", "create", "incident investigator", "--instructions", "Look at the logs.",
            "--tools", '[{"type": "builtin", "name": "query_logs"}]', "--metadata", "team=sre", "--json",
            env=env,
        ).stdout
    )  # fmt: skip
    assert (created["version"], created["instructions"], created["metadata"]) == (
        1,
        "Look at the logs.",
        {"team": "sre"},
    )
    line = threadline("agents", "update", created["id"], "--model", "offline/scripted", env=env).stdout
    assert line.split()[:3] == [created["id"], "v2", "offline/scripted"]
    listed = threadline("agents", "list", env=env).stdout
    assert created["id"] in listed and "incident investigator" in listed
    versions = threadline("agents", "show", created["id"], "--versions", env=env).stdout.splitlines()
    assert [row.split()[1] for row in versions] == ["v2", "v1"]
    shown = threadline("agents", "show", created["id"], env=env).stdout
    assert "instructions: Look at the logs." in shown
    thread = json.loads(threadline("threads", "create", "--title", "Pager", "--json", env=env).stdout)
    run = json.loads(
        threadline(
            "runs", "create", thread["id"], "--agent", created["id"], "--agent-version", "1",
            "--input", "#notools why?", "--json", env=env,
        ).stdout
    )  # fmt: skip
    assert (run["agentId"], run["agentVersion"], run["model"]) == (created["id"], 1, "offline/scripted")
    bad = threadline("agents", "create", "x", "--tools", "not json", env=env, check=False)
    assert bad.returncode == 2 and "--tools is not JSON" in bad.stderr
    threadline("agents", "delete", created["id"], env=env)
    gone = threadline("agents", "show", created["id"], env=env, check=False)
    assert gone.returncode == 1 and "not found" in gone.stderr.lower()
