"""Tools the model may call, as the agent runs them. Each acts for the run's organization only: the
organization comes from the run, never from the model's arguments, so no prompt can reach another tenant's
data.

A tool answers with a JSON-able result; a failure (bad arguments, nothing found is not one) is returned as
``isError`` with a message the model can read and correct, not raised: the run goes on. The tools themselves
live with the data they reach (``search.tool``, ``telemetry.tool``, ``runs.artifact_tool``), above the agent;
the composition root hands the executor their catalogue (``Tools``), in the order the model is shown them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    arguments: type[Arguments]
    run: Callable[[ToolContext, Any], Awaitable[ToolResult]]


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
        self._tools = {t.spec.name: t for t in tools}
        self.specs = [t.spec for t in self._tools.values()]

    async def call(self, context: ToolContext, call: ToolCall) -> ToolResult:
        found = self._tools.get(call.name)
        if found is None:
            return ToolResult(f"unknown tool {call.name!r}; tools: {', '.join(self._tools)}", is_error=True)
        try:
            raw = json.loads(call.arguments or "{}")
            arguments = found.arguments.model_validate(raw)
        except json.JSONDecodeError as error:
            return ToolResult(f"arguments are not JSON: {error}", is_error=True)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
            )
            return ToolResult(f"invalid arguments: {problems}", is_error=True)
        return await found.run(context, arguments)
