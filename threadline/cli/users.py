"""Operator commands for dashboard logins: a login of an organization, and a new password for one.

Passwords are generated, never chosen on the command line (where shell history and process lists would
keep them), and printed once: only their argon2id hash is stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.operator import _check_schema, _run, _settings
from threadline.cli.output import emit_json

if TYPE_CHECKING:
    from threadline.kit.db import Database

users = typer.Typer(no_args_is_help=True, help="Dashboard logins (operator).")
SHOWN_ONCE = "This password is shown once and cannot be recovered; give it to its user now."


def create_user(
    org_id: Annotated[str, typer.Option("--org", help="Organization id (org_…) the login belongs to.")],
    email: Annotated[str, typer.Option(help="The login's email; unique across organizations.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """A dashboard login of the organization, with a generated password printed once."""
    from threadline.kit.clock import Clock
    from threadline.users import service

    settings = _settings()
    _check_schema(settings)
    password = service.generate_password()

    async def work(db: Database) -> dict[str, Any]:
        async with db.transaction() as conn:
            user = await service.create_user(conn, org_id, email, password, now=Clock().now())
        return {
            "id": user.id,
            "organizationId": user.organization_id,
            "email": user.email,
            "password": password,
        }

    data = _run(settings, work)
    if json_output:
        emit_json(data)
        return
    typer.echo(f"login     {data['email']}  ({data['id']}, organization {data['organizationId']})")
    typer.echo(f"password  {password}")
    typer.echo(SHOWN_ONCE)


def set_password(
    email: Annotated[str, typer.Argument(help="The login's email.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """A new generated password for the login, printed once; every dashboard session of it ends."""
    from threadline.dashboard.sessions import end_sessions_of_user
    from threadline.users import service

    settings = _settings()
    _check_schema(settings)
    password = service.generate_password()

    async def work(db: Database) -> dict[str, Any]:
        async with db.transaction() as conn:  # one transaction: no session outlives the old password
            user = await service.set_password(conn, email, password)
            ended = await end_sessions_of_user(conn, user.id)
        return {"id": user.id, "email": user.email, "password": password, "sessionsEnded": ended}

    data = _run(settings, work)
    if json_output:
        emit_json(data)
        return
    typer.echo(f"login     {data['email']}  ({data['id']})")
    typer.echo(f"password  {password}")
    typer.echo(f"{data['sessionsEnded']} dashboard session(s) ended.")
    typer.echo(SHOWN_ONCE)


def register(app: typer.Typer) -> None:
    users.command("create")(create_user)
    users.command("set-password")(set_password)
    app.add_typer(users, name="users")
