"""``threadline keys mint``: an API key made straight in the database, by the operator.

For the day every key was lost: only a hash of each key is stored, so a lost key is never recovered, and
without a secret key nobody can reach the API to make another. This command needs no key, only the
database, and makes the key the way the API does (``keys.service.create_key``)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.operator import _check_schema, _run, _settings
from threadline.cli.output import emit_json, fail

if TYPE_CHECKING:
    from threadline.kit.db import Database

SHOWN_ONCE = "This key is shown once and cannot be recovered (only its hash is stored); store it now."


class KeyKind(StrEnum):
    secret = "secret"  # noqa: S105 - a key type, not a secret
    public = "public"


def mint_key(
    org_id: Annotated[
        str, typer.Option("--org", metavar="ORG_ID", help="Organization id (org_...) the key belongs to.")
    ],
    name: Annotated[str, typer.Option(metavar="NAME", help="A descriptive label, 1 to 200 characters.")],
    kind: Annotated[
        KeyKind,
        typer.Option(
            "--type",
            help="secret: the whole organization, for the API; public: one project, for the intake.",
        ),
    ] = KeyKind.secret,
    project_id: Annotated[
        str | None,
        typer.Option(metavar="PROJECT_ID", help="The project of a public key (proj_...); required for one."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Make an API key in the database (no key needed) and print it once: for when every key is lost."""
    from threadline.keys import service
    from threadline.keys.schemas import KeyCreated, KeyOut
    from threadline.kit.clock import Clock
    from threadline.organizations.repository import OrganizationRepository

    label = name.strip()
    if not 0 < len(label) <= 200:
        fail("the name must be 1 to 200 characters", code=2)
    if kind is KeyKind.public and project_id is None:
        fail("a public key belongs to one project: give --project-id PROJECT_ID", code=2)
    if kind is KeyKind.secret and project_id is not None:
        fail("a secret key covers the whole organization; --project-id is only for public keys", code=2)
    settings = _settings()
    _check_schema(settings)

    async def work(db: Database) -> dict[str, Any]:
        async with db.transaction() as conn:
            if await OrganizationRepository(conn).get(org_id) is None:
                fail(f"organization {org_id} was not found (threadline orgs list shows them)")
            key, value = await service.create_key(
                conn, org_id, name=label, key_type=kind.value, project_id=project_id, now=Clock().now()
            )
        created = KeyCreated(**KeyOut.of(key).model_dump(), key=value)
        data: dict[str, Any] = created.model_dump(mode="json", by_alias=True)
        data["organizationId"] = org_id
        return data

    data = _run(settings, work)
    if json_output:
        emit_json(data)
        return
    scope = f"project {data['projectId']}" if data["projectId"] else "the whole organization"
    typer.echo(f"key    {data['id']}  {data['type']}  {data['name']}  ({org_id}, {scope})")
    typer.echo(f"value  {data['key']}")
    typer.echo(SHOWN_ONCE)


def register_keys(app: typer.Typer) -> None:
    """Into the ``keys`` group of the client's commands (``create``, ``list``, ``revoke``), registered on
    ``app`` before this: one group for both kinds, as ``billing`` is."""
    keys = next(group.typer_instance for group in app.registered_groups if group.name == "keys")
    assert keys is not None, "the client's keys group is registered first"
    keys.command("mint")(mint_key)
