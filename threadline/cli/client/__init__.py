"""Client commands: the API, through the SDK, with THREADLINE_API_KEY and THREADLINE_BASE_URL."""

from __future__ import annotations

import typer

from threadline.cli.client import (
    agents,
    automations,
    keys,
    logs,
    mcp_servers,
    run_actions,
    runs,
    threads,
    webhooks,
)
from threadline.cli.client.billing import register_billing

__all__ = ["register", "register_billing"]


def register(app: typer.Typer) -> None:
    keys.register_keys(app)
    threads.register_threads(app)
    logs.register_logs(app)
    run_actions.register_run_actions()
    runs.register_runs(app)
    automations.register_automations(app)
    agents.register_agents(app)
    mcp_servers.register_mcp_servers(app)
    webhooks.register_webhooks(app)
