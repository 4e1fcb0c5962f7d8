"""``threadline agents``: saved run configurations, versioned (through the API). Runs use one with
``threadline runs create THREAD --agent agt_…``."""

from __future__ import annotations

import itertools
from typing import Annotated, Any

import typer

from threadline.cli.client.common import (
    fetch,
    parse_metadata,
    read_text,
    response_format_option,
    with_api_key,
)
from threadline.cli.client.runs import tool_entries
from threadline.cli.output import emit_json

agents = typer.Typer(
    no_args_is_help=True, help="Agents: saved, versioned run configurations (through the API)."
)

Model = Annotated[str | None, typer.Option(help="provider/model; 'default' clears it (the organization's).")]
Instructions = Annotated[str | None, typer.Option(help="The system prompt (@FILE reads a file).")]
Tools = Annotated[
    str | None, typer.Option(help="A JSON array of tool entries as runs take them (@FILE reads a file).")
]
ResponseFormat = Annotated[
    str | None,
    typer.Option(help='A JSON object: {"type":"text"} or {"type":"json_schema","name","schema"} (@FILE).'),
]
ActionTimeout = Annotated[int | None, typer.Option(help="Seconds its runs may wait for their caller.")]
Metadata = Annotated[list[str] | None, typer.Option("--metadata", help="KEY=VALUE, repeatable.")]
JsonOutput = Annotated[bool, typer.Option("--json")]
AgentId = Annotated[str, typer.Argument(help="agt_…")]


def _line(agent: dict[str, Any]) -> str:
    model = agent["model"] or "(default model)"
    return f"{agent['id']}  v{agent['version']}  {model}  {agent['name']}"


def _fields(
    model: str | None,
    instructions: str | None,
    tools: str | None,
    response_format: str | None,
    action_timeout: int | None,
    metadata: list[str] | None,
) -> dict[str, Any]:
    """The options given as the client's keyword arguments (the others left out)."""
    fields: dict[str, Any] = {}
    if model is not None:
        fields["model"] = None if model == "default" else model
    if instructions is not None:
        fields["instructions"] = read_text("--instructions", instructions)
    if tools is not None:
        fields["tools"] = tool_entries(tools)
    if response_format is not None:
        fields["response_format"] = response_format_option(response_format)
    if action_timeout is not None:
        fields["action_timeout_seconds"] = action_timeout
    if metadata is not None:
        fields["metadata"] = parse_metadata(metadata)
    return fields


def create_agent(
    name: Annotated[str, typer.Argument(help="A name for people.")],
    model: Model = None,
    instructions: Instructions = None,
    tools: Tools = None,
    response_format: ResponseFormat = None,
    action_timeout: ActionTimeout = None,
    metadata: Metadata = None,
    json_output: JsonOutput = False,
) -> None:
    """Save an agent (version 1)."""
    fields = _fields(model, instructions, tools, response_format, action_timeout, metadata)
    data = fetch(lambda c: c.agents.create(name=name, **fields))
    emit_json(data) if json_output else typer.echo(_line(data))


def list_agents(
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: JsonOutput = False,
) -> None:
    """The organization's agents, newest first, each at its latest version."""
    data = fetch(lambda c: list(itertools.islice(c.agents.list(limit=min(limit, 100)), limit)))
    if json_output:
        emit_json(data)
        return
    for agent in data:
        typer.echo(_line(agent))


def show_agent(
    agent_id: AgentId,
    versions: Annotated[bool, typer.Option("--versions", help="Every version, newest first.")] = False,
    json_output: JsonOutput = False,
) -> None:
    """An agent at its latest version (with --versions, all of them)."""
    if versions:
        data = fetch(lambda c: list(c.agents.versions(agent_id)))
        if json_output:
            emit_json(data)
            return
        for version in data:
            typer.echo(f"{_line(version)}  {version['updatedAt']}")
        return
    data = fetch(lambda c: c.agents.get(agent_id))
    if json_output:
        emit_json(data)
        return
    typer.echo(_line(data))
    for label, key in [("instructions", "instructions"), ("tools", "tools"), ("format", "responseFormat")]:
        if data[key] is not None:
            typer.echo(f"  {label}: {data[key]}")


def update_agent(
    agent_id: AgentId,
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
    model: Model = None,
    instructions: Instructions = None,
    tools: Tools = None,
    response_format: ResponseFormat = None,
    action_timeout: ActionTimeout = None,
    metadata: Metadata = None,
    json_output: JsonOutput = False,
) -> None:
    """Save a new version with the options given replaced (earlier versions stay as they were)."""
    from threadline_client import NOT_GIVEN

    fields = _fields(model, instructions, tools, response_format, action_timeout, metadata)
    data = fetch(lambda c: c.agents.update(agent_id, name=name if name is not None else NOT_GIVEN, **fields))
    emit_json(data) if json_output else typer.echo(_line(data))


def delete_agent(agent_id: AgentId, json_output: JsonOutput = False) -> None:
    """Delete the agent and its versions; its runs keep their record."""
    data = fetch(lambda c: c.agents.delete(agent_id))
    emit_json(data) if json_output else typer.echo(f"deleted {_line(data)}")


def register_agents(app: typer.Typer) -> None:
    agents.command("create")(with_api_key(create_agent))
    agents.command("list")(with_api_key(list_agents))
    agents.command("show")(with_api_key(show_agent))
    agents.command("update")(with_api_key(update_agent))
    agents.command("delete")(with_api_key(delete_agent))
    app.add_typer(agents, name="agents")
