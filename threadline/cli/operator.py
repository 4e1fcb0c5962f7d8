"""Operator commands: they act on the database named by the configuration."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from threadline.cli.output import emit_json, fail

if TYPE_CHECKING:
    from threadline.config import Settings
    from threadline.kit.db import Database
    from threadline.provisioning import NewOrganization

# The server's modules are imported inside the commands that use them: client commands and --help then
# start without loading SQLAlchemy, FastAPI and the migrations.
T = TypeVar("T")
orgs = typer.Typer(no_args_is_help=True, help="Organizations (operator).")


def _settings(*, redis: bool = False, create: bool = False) -> Settings:
    """The settings, with the database checked reachable (and Redis, for commands that use it): a wrong
    setting ends the command with one line naming it (``cli.preflight``). ``create``: the command may
    create the database (``init``, ``migrate``, ``restore``); every other one needs it to exist and hold
    Threadline's schema, and creates nothing (not even the data directory) when it does not."""
    from pydantic import ValidationError

    from threadline.cli.preflight import (
        CONFIG_ERROR,
        check_database,
        check_initialised,
        check_redis,
        sqlite_file,
    )
    from threadline.config import Settings

    try:
        settings = Settings()
    except ValidationError as error:
        problems = "; ".join(
            f"THREADLINE_{'_'.join(str(part) for part in problem['loc']).upper()}: {problem['msg']}"
            for problem in error.errors(include_url=False)
        )
        fail(problems, CONFIG_ERROR)
    check_database(settings)
    if redis:
        check_redis(settings)
    if create:
        path = sqlite_file(settings)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
    else:
        check_initialised(settings)
    return settings


def _run(settings: Settings, work: Callable[[Database], Awaitable[T]]) -> T:
    from threadline.kit.db import Database
    from threadline.kit.errors import ApiError
    from threadline.kit.faults import dependency_of

    async def main() -> T:
        db = Database(settings.resolved_database_url)
        try:
            return await work(db)
        finally:
            await db.dispose()

    try:
        return asyncio.run(main())
    except ApiError as error:
        fail(error.message)
    except Exception as error:
        if dependency_of(error) is None:
            raise
        fail(f"cannot reach the database: {error}")


def _migrate(settings: Settings) -> None:
    import sqlalchemy as sa

    from threadline.storage import migrate as migrations

    try:
        migrations.upgrade(settings.resolved_database_url)
    except (OSError, sa.exc.OperationalError, sa.exc.InterfaceError) as error:
        fail(f"cannot migrate the database: {error}")


def _bootstrap_json(new: NewOrganization, settings: Settings) -> dict[str, Any]:
    from threadline.organizations.schemas import OrganizationOut
    from threadline.projects.schemas import ProjectOut

    limit = new.organization.limits(settings).requests_per_minute
    return {
        "organization": OrganizationOut.of(new.organization, limit).model_dump(mode="json"),
        "project": ProjectOut.of(new.project).model_dump(mode="json"),
        "secretKey": new.secret_value,
        "publicKey": new.public_value,
    }


def _print_bootstrap(data: dict[str, Any]) -> None:
    typer.echo(f"organization  {data['organization']['id']}  ({data['organization']['name']})")
    typer.echo(f"project       {data['project']['id']}  ({data['project']['name']})")
    typer.echo(f"secret key    {data['secretKey']}")
    typer.echo(f"public key    {data['publicKey']}")
    if "owner" in data:
        typer.echo(f"owner login   {data['owner']['email']} / {data['owner']['password']}")
    typer.echo("These values are shown once and cannot be recovered; store them now.")


def init(
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    owner_email: Annotated[str, typer.Option(help="Email of the dashboard owner login.")] = "owner@localhost",
) -> None:
    """Create the database, organization "default", project "default", the owner login and two keys."""
    import sqlalchemy as sa

    from threadline import provisioning as org_service
    from threadline.kit.clock import Clock
    from threadline.kit.encryption import ensure_key_file
    from threadline.organizations.repository import OrganizationRepository
    from threadline.organizations.tables import organizations
    from threadline.users import service as users

    settings = _settings(create=True)
    refusal = "this database is already initialised; add organizations with `threadline orgs create`"

    async def initialised(db: Database) -> bool:
        if not await db.run_sync(lambda sync: sa.inspect(sync).has_table(organizations.name)):
            return False
        async with db.transaction(write=False) as conn:
            return await OrganizationRepository(conn).count() > 0

    if _run(settings, initialised):
        fail(refusal)  # before migrating: an existing database is left exactly as it was
    _migrate(settings)
    if settings.encryption_key is None and settings.is_sqlite:
        # The embedded shape's key for secrets at rest (kit/encryption.py), beside the database it protects.
        ensure_key_file(settings.data_dir)
    password = users.generate_password()

    async def work(db: Database) -> dict[str, Any]:
        now = Clock().now()
        async with db.transaction() as conn:
            if await OrganizationRepository(conn).count() > 0:  # another init won the race
                fail(refusal)
            new = await org_service.create_organization(conn, "default", now=now)
            owner = await users.create_owner(conn, new.organization.id, owner_email, password, now=now)
        data = _bootstrap_json(new, settings)
        data["owner"] = {"email": owner.email, "password": password}
        return data

    data = _run(settings, work)
    emit_json(data) if json_output else _print_bootstrap(data)


def migrate() -> None:
    """Apply every pending schema migration, one at a time (each named on a terminal).

    Creates the database when there is none (an embedded one in THREADLINE_DATA_DIR, and says so); every
    other operator command but init and restore refuses to run without one."""
    import time

    from threadline.cli import migrating
    from threadline.cli.preflight import sqlite_file

    settings = _settings(create=True)
    path = sqlite_file(settings)
    if path is not None and not path.exists():
        typer.echo(
            f"creating a new database at {path} (threadline init adds the first organization)", err=True
        )
    started = time.monotonic()
    applied = migrating.apply(settings)
    migrating.summary(applied, time.monotonic() - started)


def _check_schema(settings: Settings) -> None:
    from threadline.storage import migrate as migrations

    if not _run(settings, migrations.is_current):
        fail(
            "the database schema is not current: run `threadline migrate` (or `threadline init` on a new one)"
        )


def _serve(
    host: str,
    port: int | None,
    intake_port: int | None,
    intake_option: str,
    metrics_port: int | None = None,
) -> None:
    """``intake_option``: the option that sets the intake's port, for the message when it is taken."""
    from threadline.kit.logging import configure_logging
    from threadline.server import Listener, ServeError, serve

    settings = _settings(redis=True)
    configure_logging(settings.log_level)
    _check_schema(settings)
    api = Listener(host, port, "--port") if port is not None else None
    intake = Listener(host, intake_port, intake_option) if intake_port is not None else None
    metrics = Listener(host, metrics_port, "--metrics-port") if metrics_port is not None else None
    try:
        import uvloop

        uvloop.run(serve(settings, api, intake, metrics))
    except ServeError as error:
        fail(str(error))


def serve_command(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="API port (http://HOST:PORT/v1).", min=1, max=65535)] = 8080,
    intake_port: Annotated[
        int, typer.Option(help="Intake port (http://HOST:PORT/v1/logs).", min=1, max=65535)
    ] = 8081,
) -> None:
    """Run the API and the intake until SIGTERM or Ctrl-C, then shut down gracefully."""
    _serve(host, port, intake_port, "--intake-port")


def serve_intake(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Intake port.", min=1, max=65535)] = 8081,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Answer GET /metrics (Prometheus) on this port.", min=1, max=65535),
    ] = None,
) -> None:
    """Run the intake alone, to scale it apart from the API."""
    _serve(host, None, port, "--port", metrics_port)


def worker(
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Answer GET /metrics (Prometheus) on this port.", min=1, max=65535),
    ] = None,
    metrics_host: Annotated[str, typer.Option(help="Interface the metrics port listens on.")] = "127.0.0.1",
) -> None:
    """Execute queued runs until SIGTERM or Ctrl-C (the distributed shape: PostgreSQL and Redis)."""
    from threadline.kit.logging import configure_logging
    from threadline.server import Listener, ServeError
    from threadline.worker import work

    settings = _settings(redis=True)
    configure_logging(settings.log_level)
    _check_schema(settings)
    import uvloop

    metrics = Listener(metrics_host, metrics_port, "--metrics-port") if metrics_port is not None else None
    try:
        uvloop.run(work(settings, metrics=metrics))
    except ServeError as error:
        fail(str(error))


def create_org(
    name: Annotated[str, typer.Argument(help="Organization name.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Another organization, with its default project and one key of each type."""
    from threadline import provisioning as org_service
    from threadline.kit.clock import Clock

    settings = _settings()
    if not name.strip() or len(name) > 200:
        fail("the name must be 1 to 200 characters")

    async def work(db: Database) -> dict[str, Any]:
        async with db.transaction() as conn:
            new = await org_service.create_organization(conn, name.strip(), now=Clock().now())
        return _bootstrap_json(new, settings)

    data = _run(settings, work)
    emit_json(data) if json_output else _print_bootstrap(data)


def list_orgs(
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """Every organization, oldest first, with its limits (an operator's own, else the defaults)."""
    import sqlalchemy as sa

    from threadline.organizations.repository import columns, from_row
    from threadline.organizations.tables import organizations

    settings = _settings()

    async def work(db: Database) -> list[dict[str, Any]]:
        async with db.transaction(write=False) as conn:
            query = sa.select(*columns()).order_by(organizations.c.id)
            found = [from_row(row) for row in (await conn.execute(query)).mappings()]
        return [
            {
                "id": org.id,
                "name": org.name,
                "requestsPerMinute": limits.requests_per_minute,
                "concurrentRuns": limits.concurrent_runs,
                "streams": limits.streams,
                "automations": limits.automations,
                "queuedRuns": limits.queued_runs,
            }
            for org in found
            for limits in [org.limits(settings)]
        ]

    data = _run(settings, work)
    if json_output:
        emit_json(data)
        return
    for org in data:
        limits = (
            f"{org['requestsPerMinute']:>8}/min  {org['concurrentRuns']:>3} runs  {org['streams']:>5} streams"
            f"  {org['automations']:>4} automations"
        )
        typer.echo(f"{org['id']}  {limits}  {org['name']}")


def set_limit(
    org_id: Annotated[str, typer.Argument(help="Organization id (org_…).")],
    requests_per_minute: Annotated[
        int | None, typer.Option("--requests-per-minute", min=1, max=10_000_000)
    ] = None,
    concurrent_runs: Annotated[
        int | None,
        typer.Option("--concurrent-runs", min=1, max=1024, help="Runs executing at once (default 4)."),
    ] = None,
    streams: Annotated[
        int | None,
        typer.Option("--streams", min=1, max=1_000_000, help="Streams open at once, per server process."),
    ] = None,
    automations: Annotated[
        int | None,
        typer.Option("--automations", min=1, max=1_000_000, help="Automations held at once (default 100)."),
    ] = None,
    queued_runs: Annotated[
        int | None,
        typer.Option(
            "--queued-runs",
            min=1,
            max=1_000_000,
            help="Runs queued before an automation's firing starts no more (default 100).",
        ),
    ] = None,
) -> None:
    """Raise or lower an organization's limits; running servers and workers apply them at once."""
    from threadline import provisioning as org_service
    from threadline.kit.clock import Clock
    from threadline.kit.signals import MemorySignalBus, RedisSignalBus, SignalBus
    from threadline.runtime import connect_redis

    given = (requests_per_minute, concurrent_runs, streams, automations, queued_runs)
    if all(value is None for value in given):
        fail(
            "give at least one limit: --requests-per-minute N, --concurrent-runs N, --streams N, "
            "--automations N, --queued-runs N",
            code=2,
        )
    settings = _settings()

    async def work(db: Database) -> None:
        redis = connect_redis(settings)
        signals: SignalBus = (
            MemorySignalBus() if redis is None else RedisSignalBus(redis, settings.redis_prefix)
        )
        now = Clock().now()
        try:
            async with db.transaction() as conn:
                if requests_per_minute is not None:
                    await org_service.set_rate_limit(conn, signals, org_id, requests_per_minute, now=now)
                if concurrent_runs is not None:
                    await org_service.set_run_concurrency(conn, signals, org_id, concurrent_runs, now=now)
                if streams is not None:
                    await org_service.set_stream_limit(conn, signals, org_id, streams, now=now)
                if automations is not None:
                    await org_service.set_automation_limit(conn, signals, org_id, automations, now=now)
                if queued_runs is not None:
                    await org_service.set_queued_run_limit(conn, signals, org_id, queued_runs, now=now)
        finally:
            if redis is not None:
                await redis.aclose()

    _run(settings, work)
    if requests_per_minute is not None:
        typer.echo(f"{org_id}: {requests_per_minute} requests per minute")
    if concurrent_runs is not None:
        typer.echo(f"{org_id}: {concurrent_runs} runs executing at once")
    if streams is not None:
        typer.echo(f"{org_id}: {streams} open streams per process")
    if automations is not None:
        typer.echo(f"{org_id}: {automations} automations")
    if queued_runs is not None:
        typer.echo(f"{org_id}: {queued_runs} queued runs before firings wait")


_MAX_GRANT = 1_000_000_000_000


def grant_credits(
    org_id: Annotated[str, typer.Argument(help="Organization id (org_…).")],
    amount: Annotated[int, typer.Argument(help="Credits to add: a positive integer.")],
    description: Annotated[
        str | None, typer.Option(help="What the grant is for (shown in the organization's ledger).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="The transaction as JSON.")] = False,
) -> None:
    """Add credits to an organization: one credit entry in its ledger, counted at once."""
    from threadline.billing.ledger import LedgerRepository
    from threadline.billing.schemas import TransactionOut
    from threadline.kit.clock import Clock
    from threadline.organizations.repository import OrganizationRepository

    if not 0 < amount <= _MAX_GRANT:
        fail(
            f"the amount must be a positive integer of credits, at most {_MAX_GRANT:,} (got {amount})", code=2
        )
    text = (description or "").strip() or "Credits granted by an operator."
    settings = _settings()
    _check_schema(settings)  # an old schema has no ledger: say so rather than fail inside the insert

    async def work(db: Database) -> dict[str, Any]:
        async with db.transaction() as conn:
            if await OrganizationRepository(conn).get(org_id) is None:
                fail(f"organization {org_id} was not found")
            entry = await LedgerRepository(conn, org_id).post("credit", amount, text, now=Clock().now())
        return TransactionOut.of(entry).model_dump(mode="json", by_alias=True)

    data = _run(settings, work)
    if json_output:
        emit_json(data)
    else:
        typer.echo(f"{data['id']}  {org_id}  +{data['amount']} credits  balance {data['balanceAfter']}")


def openapi(
    output: Annotated[Path | None, typer.Option(help="Write here instead of standard output.")] = None,
) -> None:
    """Print (or write) the OpenAPI contract generated from the code."""
    from threadline.app import create_app
    from threadline.contract import build_contract, render
    from threadline.intake_app import create_intake_app

    text = render(build_contract(create_app(), create_intake_app()))
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text)


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(migrate)
    app.command("serve")(serve_command)
    app.command("serve-intake")(serve_intake)
    app.command()(worker)
    app.command()(openapi)
    orgs.command("create")(create_org)
    orgs.command("list")(list_orgs)
    orgs.command("set-limit")(set_limit)
    app.add_typer(orgs, name="orgs")


def register_billing(billing: typer.Typer) -> None:
    """Into the ``billing`` group shared with the client's ``balance`` and ``transactions``."""
    # A negative AMOUNT ("-5") would otherwise be taken for an unknown option: let it reach the check.
    billing.command("grant", context_settings={"ignore_unknown_options": True})(grant_credits)
