"""Agent bodies. The fields an agent holds are those of a run's body and are checked by the same types
(``settings.schemas.ModelName``, ``agent.tool_entries``, ``agent.response_format``), so an agent refuses
exactly what a run would."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints

from threadline.agent.response_format import ResponseFormat
from threadline.agent.tool_entries import MAX_ACTION_TIMEOUT_SECONDS, MAX_TOOLS, ToolEntries
from threadline.agents.repository import Agent
from threadline.kit.metadata import Metadata
from threadline.kit.schemas import NOT_BLANK, Documented, NullRefused, RequestModel, ResponseModel, Timestamp
from threadline.settings.schemas import MAX_INSTRUCTIONS_CHARS, ModelName


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(_no_nul),
    Documented({"pattern": NOT_BLANK}),
]
Model = Annotated[
    ModelName | None,
    Field(description="`provider/model`; null: the organization's `defaultModel` when a run starts."),
]
Instructions = Annotated[
    Annotated[str, StringConstraints(max_length=MAX_INSTRUCTIONS_CHARS)] | None,
    Field(description="The system prompt; null: the organization's `instructions` setting."),
]
Tools = Annotated[
    ToolEntries | None,
    Field(
        description=f"As a run's `tools` (at most {MAX_TOOLS} `builtin`, `function` and `mcp` entries); "
        "null: the three built-ins."
    ),
]
Format = Annotated[
    ResponseFormat | None,
    Field(description='`{"type":"text"}` or `{"type":"json_schema","name","schema","strict"}`; null: text.'),
]
ActionTimeout = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_ACTION_TIMEOUT_SECONDS,
        description="How long its runs wait for tool outputs or approvals; null: the runs' default (600).",
    ),
]


class AgentCreate(RequestModel):
    name: Name
    model: Model = None
    instructions: Instructions = None
    tools: Tools = None
    response_format: Format = None
    action_timeout_seconds: ActionTimeout = None
    metadata: Metadata = Field(default_factory=dict)


class AgentUpdate(RequestModel):
    """Fields present are replaced (null puts an optional one back to its default); absent ones are kept.
    ``name`` and ``metadata`` cannot be null (400). Every update makes a new version."""

    name: Annotated[Name | None, NullRefused()] = None
    model: Model = None
    instructions: Instructions = None
    tools: Tools = None
    response_format: Format = None
    action_timeout_seconds: ActionTimeout = None
    metadata: Annotated[Metadata | None, NullRefused()] = None


class AgentOut(ResponseModel):
    id: str
    version: int = Field(description="1 when created; each update adds one.")
    name: str
    model: str | None
    instructions: str | None
    tools: list[dict[str, Any]] | None = Field(description="The tool entries as given; null: the built-ins.")
    response_format: dict[str, Any] | None = Field(description="As given; null: text.")
    action_timeout_seconds: int | None
    metadata: dict[str, str]
    created_at: Timestamp
    updated_at: Timestamp = Field(description="When this version was made.")

    @classmethod
    def of(cls, agent: Agent) -> AgentOut:
        return cls(
            id=agent.id,
            version=agent.version,
            name=agent.name,
            model=agent.model,
            instructions=agent.instructions,
            tools=agent.tools,
            response_format=agent.response_format,
            action_timeout_seconds=agent.action_timeout_seconds,
            metadata=agent.metadata,
            created_at=agent.created_at,
            updated_at=agent.updated_at,
        )
