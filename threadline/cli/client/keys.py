"""``threadline me`` and ``threadline keys``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from threadline.cli.client.common import call
from threadline.cli.output import emit_json

keys = typer.Typer(no_args_is_help=True, help="API keys (through the API).")


def _key_line(key: dict[str, Any]) -> str:
    state = "revoked" if key["revokedAt"] else "active"
    return f"{key['id']}  {key['type']:<6}  {key['prefix']}…{key['last4']}  {state:<7}  {key['name']}"


def me(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Which organization and key the configured credential stands for."""
    data = call(lambda c: c.me())
    if json_output:
        emit_json(data)
    else:
        typer.echo(
            f"{data['organization']['id']}  {data['organization']['name']}  via {_key_line(data['key'])}"
        )


def create_key(
    name: Annotated[str, typer.Option(help="A descriptive label.")],
    type: Annotated[str, typer.Option("--type", help="secret or public.")] = "secret",
    project_id: Annotated[str | None, typer.Option(help="Project of a public key.")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a key and print its value, the only time it is shown."""
    data = call(lambda c: c.keys.create(name=name, type=type, project_id=project_id))
    if json_output:
        emit_json(data)
    else:
        typer.echo(_key_line(data))
        typer.echo(data["key"])


def list_keys(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every key of the organization, newest first."""
    data = call(lambda c: list(c.keys.iterate()))
    if json_output:
        emit_json(data)
        return
    for key in data:
        typer.echo(_key_line(key))


def revoke_key(key_id: Annotated[str, typer.Argument(help="Key id (key_…).")]) -> None:
    """Revoke a key; every server process refuses it within a second."""
    data = call(lambda c: c.keys.revoke(key_id))
    typer.echo(_key_line(data))


def register_keys(app: typer.Typer) -> None:
    app.command()(me)
    keys.command("create")(create_key)
    keys.command("list")(list_keys)
    keys.command("revoke")(revoke_key)
    app.add_typer(keys, name="keys")
