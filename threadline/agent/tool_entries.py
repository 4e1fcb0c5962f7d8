"""The ``tools`` a run (and, later, an agent) is given: the entries' shapes and every rule they must meet,
in one place, so every resource that takes tool entries refuses the same bad entry the same way.

Shape rules (a name's pattern, a JSON Schema that is a schema, at most 64 entries) are checked while the
body is read, so a bad entry is a 400 naming it; the rules across entries (two tools of one name) and those
that need the database (an MCP server the organization cannot see: 404, exactly as one that does not exist)
are checked by ``check_entries`` in the request's transaction.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from jsonschema import exceptions as schema_errors
from jsonschema import validators
from pydantic import Field, StringConstraints, field_validator

from threadline.kit.db import Conn
from threadline.kit.errors import BadRequest, Reason
from threadline.kit.schemas import RequestModel
from threadline.mcp_servers.service import get_server

MAX_TOOLS = 64
NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
BUILTIN_NAMES = ("search_messages", "query_logs", "create_artifact")
MAX_DESCRIPTION_CHARS = 4096
# How long a run waits for tool outputs or approvals by default, and at most (runs and agents take it).
DEFAULT_ACTION_TIMEOUT_SECONDS = 600
MAX_ACTION_TIMEOUT_SECONDS = 86_400

ToolName = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


class BuiltinEntry(RequestModel):
    type: Literal["builtin"]
    name: Literal["search_messages", "query_logs", "create_artifact"]
    require_approval: bool = Field(False, description="A person or the caller approves each call first.")


class FunctionEntry(RequestModel):
    type: Literal["function"]
    name: ToolName
    description: Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION_CHARS)] = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="The arguments' JSON Schema (checked as a schema); default: an object, no properties.",
    )

    @field_validator("parameters")
    @classmethod
    def _a_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            validators.validator_for(value).check_schema(value)
        except schema_errors.SchemaError as error:
            raise ValueError(f"parameters is not a valid JSON Schema: {error.message}") from None
        return value


class McpEntry(RequestModel):
    type: Literal["mcp"]
    server_id: Annotated[str, StringConstraints(min_length=1, max_length=40)]
    allowed_tools: list[ToolName] | None = Field(
        None, max_length=MAX_TOOLS * 4, description="Only these of the server's tools; null: all of them."
    )
    require_approval: Literal["always", "never"] | list[ToolName] = Field(
        "always", description='"always" (default), "never", or the names of the tools that need approval.'
    )


ToolEntry = Annotated[BuiltinEntry | FunctionEntry | McpEntry, Field(discriminator="type")]
ToolEntries = Annotated[list[ToolEntry], Field(max_length=MAX_TOOLS)]


async def check_entries(conn: Conn, organization_id: str, entries: list[ToolEntry]) -> None:
    """400 ``TOOL_NAME_CONFLICT`` when two entries name one tool; 404 for a server the organization cannot
    see. (An MCP server's own tool names are known only when a run connects: a clash there makes the
    later tool unavailable to the model and is reported to it as an unknown tool.)"""
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if isinstance(entry, McpEntry):
            await get_server(conn, organization_id, entry.server_id)
            continue
        if entry.name in seen:
            raise BadRequest(
                f"tools[{index}]: two tools are named {entry.name!r}.", reason=Reason.TOOL_NAME_CONFLICT
            )
        seen.add(entry.name)


def entries_json(entries: list[ToolEntry]) -> list[dict[str, Any]]:
    """As stored on the run and shown back (camelCase, defaults filled in)."""
    return [entry.model_dump(mode="json", by_alias=True) for entry in entries]
