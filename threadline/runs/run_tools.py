"""The tools one run offers, from its ``tools`` entries (agent.tool_entries): the built-ins it names (with
their ``requireApproval``), its function tools (executed by the caller), and the tools of its MCP servers,
each server reached through one session the run holds for all its calls (mcp_servers.service.session).

Without entries, the built-in catalogue as it is. A server that cannot be reached when the run starts
offers no tools (logged); a model calling one anyway is told the tool is unknown, and the run goes on, as
it does when a session breaks mid-run (each call is then an error result).
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any

from threadline.agent.models import ToolSpec
from threadline.agent.tools import Tool, ToolContext, ToolResult, Tools
from threadline.kit.db import Database
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox
from threadline.kit.errors import ApiError
from threadline.mcp_servers.connection import McpSession
from threadline.mcp_servers.service import session

log = logging.getLogger(__name__)


async def open_run_tools(
    stack: AsyncExitStack,
    db: Database,
    builtins: Tools,
    organization_id: str,
    entries: list[dict[str, Any]] | None,
    *,
    box: SecretBox | None,
    policy: EgressPolicy,
) -> Tools:
    """The run's catalogue; MCP sessions are entered on ``stack`` and close with it, when the run stops."""
    if entries is None:
        return builtins
    offered: list[Tool] = []
    for entry in entries:
        if entry["type"] == "builtin":
            found = builtins.get(entry["name"])
            if found is not None:
                offered.append(replace(found, approval=bool(entry.get("requireApproval"))))
        elif entry["type"] == "function":
            spec = ToolSpec(entry["name"], entry.get("description") or "", entry["parameters"])
            offered.append(Tool(spec, None, None))
        else:
            offered += await _mcp_tools(stack, db, organization_id, entry, box=box, policy=policy)
    return Tools(offered)


async def _mcp_tools(
    stack: AsyncExitStack,
    db: Database,
    organization_id: str,
    entry: dict[str, Any],
    *,
    box: SecretBox | None,
    policy: EgressPolicy,
) -> list[Tool]:
    try:
        opened = await stack.enter_async_context(
            session(db, organization_id, entry["serverId"], box=box, policy=policy)
        )
        listed = await opened.list_tools()
    except (ApiError, Exception) as error:  # gone, unreachable, or it failed to list: no tools from it
        log.info("MCP server %s offers no tools to this run: %s", entry["serverId"], error)
        return []
    allowed = entry.get("allowedTools")
    approval = entry.get("requireApproval", "always")
    tools = []
    for info in listed:
        if allowed is not None and info.name not in allowed:
            continue
        needs = approval == "always" or (isinstance(approval, list) and info.name in approval)
        spec = ToolSpec(info.name, info.description or "", info.input_schema)
        tools.append(Tool(spec, None, _caller(opened, info.name), approval=needs))
    return tools


def _caller(opened: McpSession, name: str) -> Any:
    async def call(_context: ToolContext, arguments: Any) -> ToolResult:
        result = await opened.call_tool(name, arguments)
        return ToolResult(result.result, is_error=result.is_error)

    return call
