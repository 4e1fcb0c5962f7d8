"""Tools the model may call, as the agent runs them. Each acts for the run's organization only: the
organization comes from the run, never from the model's arguments, so no prompt can reach another tenant's
data.

A tool answers with a JSON-able result; a failure (bad arguments, nothing found is not one) is returned as
``isError`` with a message the model can read and correct, not raised: the run goes on. The tools themselves
live with the data they reach (``search.tool``, ``telemetry.tool``, ``runs.artifact_tool``), above the agent;
the composition root hands the executor their catalogue (``Tools``), in the order the model is shown them.

A run may also offer tools the server does not execute: a function tool (``run`` is None) is executed by
the caller's code, and a tool with ``approval`` set waits for a person's or the caller's decision before
it runs. ``Tools.kind`` says which of the three a call is; the loop waits for the caller on the last two.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from threadline.agent.models import ToolCall, ToolSpec
from threadline.agent.recorder import Recorder
from threadline.kit.db import Database


@dataclass(frozen=True, slots=True)
class ToolContext:
    db: Database
    recorder: Recorder

    @property
    def organization_id(self) -> str:
        return self.recorder.organization_id


@dataclass(frozen=True, slots=True)
class ToolResult:
    value: Any
    is_error: bool = False


class Arguments(BaseModel):
    """A tool's arguments: unknown ones are refused, names are the model's (camelCase aliases)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


Kind = Literal["execute", "approval", "output"]


@dataclass(frozen=True, slots=True)
class Tool:
    """``arguments`` None: the arguments are passed on as the JSON object the model sent (an MCP tool,
    whose server checks them); ``run`` None: a function tool, whose result the caller submits."""

    spec: ToolSpec
    arguments: type[Arguments] | None
    run: Callable[[ToolContext, Any], Awaitable[ToolResult]] | None
    approval: bool = False


def tool(
    name: str,
    description: str,
    arguments: type[Arguments],
    run: Callable[[ToolContext, Any], Awaitable[ToolResult]],
) -> Tool:
    schema = arguments.model_json_schema(by_alias=True)
    schema.pop("title", None)
    return Tool(ToolSpec(name, description, schema), arguments, run)


class Tools:
    """The catalogue a run's model is offered, by name."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:  # the first of one name wins (an MCP server's tool clashing with another)
            self._tools.setdefault(t.spec.name, t)
        self.specs = [t.spec for t in self._tools.values()]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def kind(self, call: ToolCall) -> Kind:
        """How a call is answered: executed here, executed once approved, or answered by the caller. A
        call of a tool not offered is executed (it fails, and the model is told so)."""
        found = self._tools.get(call.name)
        if found is None:
            return "execute"
        if found.approval:
            return "approval"
        return "output" if found.run is None else "execute"

    async def call(self, context: ToolContext, call: ToolCall) -> ToolResult:
        found = self._tools.get(call.name)
        if found is None or found.run is None:
            return ToolResult(f"unknown tool {call.name!r}; tools: {', '.join(self._tools)}", is_error=True)
        try:
            raw = json.loads(call.arguments or "{}")
            if found.arguments is None:
                if not isinstance(raw, dict):
                    return ToolResult("arguments must be a JSON object", is_error=True)
                arguments: Any = raw
            else:
                arguments = found.arguments.model_validate(raw)
        except json.JSONDecodeError as error:
            return ToolResult(f"arguments are not JSON: {error}", is_error=True)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
            )
            return ToolResult(f"invalid arguments: {problems}", is_error=True)
        return await found.run(context, arguments)
