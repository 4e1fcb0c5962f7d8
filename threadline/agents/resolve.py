"""A run's effective configuration: its own fields where given, else its agent version's, else the
defaults. The one place that knows how an agent becomes a run; ``runs.service.create_run`` asks it for
every run (``POST …/runs``, automations, the dashboard).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from threadline.agent.tool_entries import DEFAULT_ACTION_TIMEOUT_SECONDS
from threadline.agents.service import get_agent
from threadline.kit.db import Conn
from threadline.kit.errors import BadRequest, Reason


@dataclass(frozen=True, slots=True)
class RunFields:
    """What a run is made with. ``model`` and ``instructions`` may still be None: the organization's
    settings fill them when the run is created (``runs.service.create_run``)."""

    model: str | None
    instructions: str | None
    tools: list[dict[str, Any]] | None
    action_timeout_seconds: int
    response_format: dict[str, Any] | None = None
    agent_id: str | None = None
    agent_version: int | None = None


async def resolve(
    conn: Conn,
    organization_id: str,
    *,
    agent_id: str | None,
    agent_version: int | None,
    model: str | None,
    instructions: str | None,
    tools: list[dict[str, Any]] | None,
    action_timeout_seconds: int | None,
    response_format: dict[str, Any] | None = None,
) -> RunFields:
    """The run's own fields (None: not given) over the agent version's (``agent_version`` None: the
    latest). 404 for an agent or version the organization cannot see; 400 for a version without an agent."""
    if agent_id is None:
        if agent_version is not None:
            raise BadRequest(
                "agentVersion needs agentId.", reason=Reason.VALIDATION_FAILED, missing_context=["agentId"]
            )
        timeout = DEFAULT_ACTION_TIMEOUT_SECONDS if action_timeout_seconds is None else action_timeout_seconds
        return RunFields(model, instructions, tools, timeout, response_format)
    agent = await get_agent(conn, organization_id, agent_id, agent_version)
    timeout = next(
        (t for t in (action_timeout_seconds, agent.action_timeout_seconds) if t is not None),
        DEFAULT_ACTION_TIMEOUT_SECONDS,
    )
    return RunFields(
        model=model if model is not None else agent.model,
        instructions=instructions if instructions is not None else agent.instructions,
        tools=tools if tools is not None else agent.tools,
        action_timeout_seconds=timeout,
        response_format=response_format if response_format is not None else agent.response_format,
        agent_id=agent.id,
        agent_version=agent.version,
    )
