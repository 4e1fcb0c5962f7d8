"""``threadline mcp-servers``: register MCP servers, see their tools, remove them (through the API)."""

from __future__ import annotations

import itertools
from typing import Annotated, Any

import typer

from threadline.cli.client.common import fetch, with_api_key
from threadline.cli.output import emit_json, fail

mcp_servers = typer.Typer(
    no_args_is_help=True, help="MCP servers whose tools runs may use (through the API)."
)


def _server_line(server: dict[str, Any]) -> str:
    headers = f"  headers: {', '.join(server['headerNames'])}" if server["headerNames"] else ""
    return f"{server['id']}  {server['transport']:<15}  {server['url']}  {server['name']}{headers}"


def _headers(pairs: list[str]) -> dict[str, str]:
    """``--header 'Name: value'`` options as a map; exits 2 on one without a colon."""
    headers: dict[str, str] = {}
    for pair in pairs:
        name, colon, value = pair.partition(":")
        if not colon or not name.strip():
            fail(f"--header takes 'Name: value', not {pair.split(':')[0]!r}…", code=2)
        headers[name.strip()] = value.strip()
    return headers


def add_server(
    name: Annotated[str, typer.Argument(help="A name for people.")],
    url: Annotated[str, typer.Argument(help="The server's MCP endpoint, e.g. https://mcp.example.com/mcp.")],
    transport: Annotated[
        str, typer.Option(help="streamable_http (the current MCP transport) or sse (the older HTTP+SSE).")
    ] = "streamable_http",
    header: Annotated[
        list[str] | None,
        typer.Option(help="'Name: value', sent on every request; repeatable. Stored encrypted, never shown."),
    ] = None,
    timeout_seconds: Annotated[float, typer.Option(help="Limit of one call, in seconds.")] = 30.0,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Register an MCP server."""
    headers = _headers(header or [])
    data = fetch(
        lambda c: c.mcp_servers.create(
            name=name, url=url, transport=transport, headers=headers, timeout_seconds=timeout_seconds
        )
    )
    emit_json(data) if json_output else typer.echo(_server_line(data))


def list_servers(
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The organization's MCP servers, newest first."""
    data = fetch(lambda c: list(itertools.islice(c.mcp_servers.list(limit=min(limit, 100)), limit)))
    if json_output:
        emit_json(data)
        return
    for server in data:
        typer.echo(_server_line(server))


def list_tools(
    server_id: Annotated[str, typer.Argument(help="mcp_…")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The server's tools now, asked of the server."""
    data = fetch(lambda c: c.mcp_servers.tools(server_id))
    if json_output:
        emit_json(data)
        return
    for tool in data["data"]:
        arguments = ", ".join(tool["inputSchema"].get("properties", {}))
        typer.echo(f"{tool['name']}({arguments})  {tool['description'] or ''}".rstrip())


def remove_server(
    server_id: Annotated[str, typer.Argument(help="mcp_…")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Delete the server's registration."""
    data = fetch(lambda c: c.mcp_servers.delete(server_id))
    emit_json(data) if json_output else typer.echo(f"removed {_server_line(data)}")


def register_mcp_servers(app: typer.Typer) -> None:
    mcp_servers.command("add")(with_api_key(add_server))
    mcp_servers.command("list")(with_api_key(list_servers))
    mcp_servers.command("tools")(with_api_key(list_tools))
    mcp_servers.command("remove")(with_api_key(remove_server))
    app.add_typer(mcp_servers, name="mcp-servers")
