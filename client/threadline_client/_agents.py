"""Agents: saved run configurations that runs (and automations) name with ``agent_id``. Every update is a
new version; earlier versions stay as they were, and a run may pin one with ``agent_version``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from threadline_client._core import NOT_GIVEN, Call, NotGiven, given
from threadline_client._endpoints import Resource, Tr, listing, operation
from threadline_client._models import ThreadlineModel


class Agent(ThreadlineModel):
    """One version of an agent (``updated_at``: when that version was made). None fields take the
    organization's defaults when a run starts."""

    id: str
    version: int
    name: str
    model: str | None
    instructions: str | None
    tools: list[dict[str, Any]] | None
    response_format: dict[str, Any] | None
    action_timeout_seconds: int | None
    metadata: dict[str, str]
    created_at: str
    updated_at: str


def _body(
    name: str | NotGiven,
    model: str | NotGiven | None,
    instructions: str | NotGiven | None,
    tools: Sequence[Mapping[str, Any]] | NotGiven | None,
    response_format: Mapping[str, Any] | NotGiven | None,
    action_timeout_seconds: int | NotGiven | None,
    metadata: Mapping[str, str] | NotGiven,
) -> dict[str, Any]:
    return given(
        name=name,
        model=model,
        instructions=instructions,
        tools=[dict(t) for t in tools] if isinstance(tools, Sequence) else tools,
        responseFormat=dict(response_format) if isinstance(response_format, Mapping) else response_format,
        actionTimeoutSeconds=action_timeout_seconds,
        metadata=dict(metadata) if isinstance(metadata, Mapping) else metadata,
    )


class Agents(Resource[Tr]):
    """``tools`` as a run takes them (``{"type": "builtin" | "function" | "mcp", ...}``);
    ``response_format`` ``{"type": "text"}`` or ``{"type": "json_schema", "name", "schema", "strict"}``."""

    @operation("agents.create")
    def create(
        self,
        *,
        name: str,
        model: str | NotGiven | None = NOT_GIVEN,
        instructions: str | NotGiven | None = NOT_GIVEN,
        tools: Sequence[Mapping[str, Any]] | NotGiven | None = NOT_GIVEN,
        response_format: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        action_timeout_seconds: int | NotGiven | None = NOT_GIVEN,
        metadata: Mapping[str, str] | NotGiven = NOT_GIVEN,
    ) -> Call[Agent]:
        """Version 1 of a new agent."""
        body = _body(name, model, instructions, tools, response_format, action_timeout_seconds, metadata)
        return Call("POST", "/agents", Agent.model_validate, json=body)

    @listing("agents.list")
    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Call[Agent]:
        """Newest first, each at its latest version."""
        return Call("GET", "/agents", Agent.model_validate, {"limit": limit, "cursor": cursor})

    @operation("agents.get")
    def get(self, agent_id: str) -> Call[Agent]:
        return Call("GET", f"/agents/{agent_id}", Agent.model_validate)

    @operation("agents.update")
    def update(
        self,
        agent_id: str,
        *,
        name: str | NotGiven = NOT_GIVEN,
        model: str | NotGiven | None = NOT_GIVEN,
        instructions: str | NotGiven | None = NOT_GIVEN,
        tools: Sequence[Mapping[str, Any]] | NotGiven | None = NOT_GIVEN,
        response_format: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        action_timeout_seconds: int | NotGiven | None = NOT_GIVEN,
        metadata: Mapping[str, str] | NotGiven = NOT_GIVEN,
    ) -> Call[Agent]:
        """A new version with the fields given replaced (None puts one back to its default)."""
        body = _body(name, model, instructions, tools, response_format, action_timeout_seconds, metadata)
        return Call("PATCH", f"/agents/{agent_id}", Agent.model_validate, json=body)

    @operation("agents.delete")
    def delete(self, agent_id: str) -> Call[Agent]:
        """Its runs keep their ``agent_id`` and ``agent_version``."""
        return Call("DELETE", f"/agents/{agent_id}", Agent.model_validate)

    @listing("agents.listVersions")
    def versions(self, agent_id: str, *, limit: int | None = None, cursor: str | None = None) -> Call[Agent]:
        """Every version as it was, newest first."""
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", f"/agents/{agent_id}/versions", Agent.model_validate, params)
