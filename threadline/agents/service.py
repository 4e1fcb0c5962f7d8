"""Agent rules: every change is a new version and no version is ever rewritten, so a run pinned to a
version runs what that version was, and a past run's ``agentVersion`` still says what it ran."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from threadline.agent.response_format import format_json
from threadline.agent.tool_entries import ToolEntry, check_entries, entries_json
from threadline.agents.repository import Agent, AgentRepository
from threadline.agents.schemas import AgentCreate
from threadline.kit.db import Conn
from threadline.kit.errors import NotFound
from threadline.kit.ids import ids_after, new_id
from threadline.kit.pagination import CursorParams

VERSION_PREFIX = "agv"


async def _tools(
    conn: Conn, organization_id: str, entries: list[ToolEntry] | None
) -> list[dict[str, Any]] | None:
    if entries is None:
        return None
    await check_entries(conn, organization_id, entries)
    return entries_json(entries)


async def create_agent(conn: Conn, organization_id: str, body: AgentCreate, *, now: datetime) -> Agent:
    agent = Agent(
        id=new_id("agt"),
        organization_id=organization_id,
        version=1,
        version_id=new_id(VERSION_PREFIX),
        name=body.name,
        model=body.model,
        instructions=body.instructions,
        tools=await _tools(conn, organization_id, body.tools),
        response_format=format_json(body.response_format),
        action_timeout_seconds=body.action_timeout_seconds,
        metadata=body.metadata,
        created_at=now,
        updated_at=now,
    )
    await AgentRepository(conn, organization_id).insert(agent)
    return agent


async def get_agent(conn: Conn, organization_id: str, agent_id: str, version: int | None = None) -> Agent:
    """The latest version, or ``version``; 404 for an agent (or version) the organization cannot see."""
    agent = await AgentRepository(conn, organization_id).get(agent_id, version)
    if agent is None:
        if version is not None and await AgentRepository(conn, organization_id).get(agent_id) is not None:
            raise NotFound(f"Agent {agent_id} has no version {version}.")
        raise NotFound(f"Agent {agent_id} was not found.")
    return agent


async def list_agents(
    conn: Conn, organization_id: str, params: CursorParams
) -> tuple[Sequence[Agent], str | None]:
    return await AgentRepository(conn, organization_id).page(params)


async def list_versions(
    conn: Conn, organization_id: str, agent_id: str, params: CursorParams
) -> tuple[Sequence[Agent], str | None]:
    await get_agent(conn, organization_id, agent_id)
    return await AgentRepository(conn, organization_id).page_of_versions(agent_id, params)


async def update_agent(
    conn: Conn, organization_id: str, agent_id: str, changes: Mapping[str, Any], *, now: datetime
) -> Agent:
    """``changes``: the fields the client sent, as validated (``tools`` and ``response_format`` as models).
    The agent's row is locked first, so two updates at once make two versions, one after the other."""
    repository = AgentRepository(conn, organization_id)
    current = await repository.get(agent_id, for_update=True)
    if current is None:
        raise NotFound(f"Agent {agent_id} was not found.")
    updated = replace(
        current,
        version=current.version + 1,
        version_id=ids_after(VERSION_PREFIX, current.version_id, 1)[0],
        name=changes.get("name", current.name),
        model=changes.get("model", current.model),
        instructions=changes.get("instructions", current.instructions),
        action_timeout_seconds=changes.get("action_timeout_seconds", current.action_timeout_seconds),
        metadata=changes.get("metadata", current.metadata),
        updated_at=now,
    )
    if "tools" in changes:
        updated = replace(updated, tools=await _tools(conn, organization_id, changes["tools"]))
    if "response_format" in changes:
        updated = replace(updated, response_format=format_json(changes["response_format"]))
    await repository.add_version(updated)
    return updated


async def delete_agent(conn: Conn, organization_id: str, agent_id: str) -> Agent:
    agent = await get_agent(conn, organization_id, agent_id)
    await AgentRepository(conn, organization_id).delete(agent_id)
    return agent
