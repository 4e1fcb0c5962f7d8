"""``threadline me`` and ``threadline keys``."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from threadline.cli.client.common import fetch, with_api_key
from threadline.cli.output import emit_json


class KeyType(StrEnum):
    secret = "secret"  # noqa: S105 - a key type, not a password
    public = "public"


keys = typer.Typer(
    no_args_is_help=True,
    help="API keys: create, list, revoke (through the API); mint (operator, on the database).",
)


def _key_line(key: dict[str, Any]) -> str:
    state = "revoked" if key["revokedAt"] else "active"
    return f"{key['id']}  {key['type']:<6}  {key['prefix']}…{key['last4']}  {state:<7}  {key['name']}"


def me(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Which organization and key the configured credential stands for."""
    data = fetch(lambda c: c.me.get())
    if json_output:
        emit_json(data)
    else:
        typer.echo(
            f"{data['organization']['id']}  {data['organization']['name']}  via {_key_line(data['key'])}"
        )


def create_key(
    name: Annotated[str, typer.Option(help="A descriptive label.")],
    type: Annotated[KeyType, typer.Option("--type", help="secret or public.")] = KeyType.secret,
    project_id: Annotated[str | None, typer.Option(help="Project of a public key.")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a key and print its value, the only time it is shown."""
    data = fetch(
        lambda c: c.keys.create(
            name=name, type="public" if type is KeyType.public else "secret", project_id=project_id
        )
    )
    if json_output:
        emit_json(data)
    else:
        typer.echo(_key_line(data))
        typer.echo(data["key"])
        typer.echo("This is the only time the key's value is shown: store it now.", err=True)


def list_keys(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every key of the organization, newest first."""
    data = fetch(lambda c: list(c.keys.list(limit=100)))
    if json_output:
        emit_json(data)
        return
    for key in data:
        typer.echo(_key_line(key))


def revoke_key(key_id: Annotated[str, typer.Argument(help="Key id (key_…).")]) -> None:
    """Revoke a key; every server process refuses it within a second."""
    data = fetch(lambda c: c.keys.revoke(key_id))
    typer.echo(_key_line(data))


def register_keys(app: typer.Typer) -> None:
    app.command()(with_api_key(me))
    keys.command("create")(with_api_key(create_key))
    keys.command("list")(with_api_key(list_keys))
    keys.command("revoke")(with_api_key(revoke_key))
    app.add_typer(keys, name="keys")
