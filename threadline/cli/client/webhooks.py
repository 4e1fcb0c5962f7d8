"""``threadline webhooks``: endpoints that receive runs' events, their deliveries, a test event (through
the API)."""

from __future__ import annotations

import itertools
from typing import Annotated, Any

import typer

from threadline.cli.client.common import fetch, with_api_key
from threadline.cli.output import emit_json

webhooks = typer.Typer(no_args_is_help=True, help="Webhook endpoints and their deliveries (through the API).")


def _webhook_line(webhook: dict[str, Any]) -> str:
    description = f"  {webhook['description']}" if webhook.get("description") else ""
    return f"{webhook['id']}  {','.join(webhook['events'])}  {webhook['url']}{description}"


def _delivery_line(delivery: dict[str, Any]) -> str:
    answer = delivery["responseStatus"] or delivery["error"] or ""
    retry = f"  next attempt {delivery['nextAttemptAt']}" if delivery["nextAttemptAt"] else ""
    return (
        f"{delivery['createdAt']}  {delivery['eventType']:<16}  #{delivery['attempt']}  "
        f"{delivery['status']:<9}  {answer}{retry}"
    ).rstrip()


def add_webhook(
    url: Annotated[str, typer.Argument(help="Where events are POSTed, e.g. https://example.com/hooks.")],
    event: Annotated[
        list[str] | None,
        typer.Option(help="run.completed, run.failed, run.cancelled, run.requires_action or *; repeatable."),
    ] = None,
    description: Annotated[str | None, typer.Option(help="A note for people.")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Register an endpoint; prints its secret (whsec_…) this once: keep it to verify deliveries."""
    from threadline_client import NOT_GIVEN

    events = event or ["*"]
    data = fetch(
        lambda c: c.webhooks.create(
            url=url, events=events, description=NOT_GIVEN if description is None else description
        )
    )
    if json_output:
        emit_json(data)
        return
    typer.echo(_webhook_line(data))
    typer.echo(f"secret: {data['secret']}  (shown only now)")


def list_webhooks(
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The organization's webhook endpoints, newest first."""
    data = fetch(lambda c: list(itertools.islice(c.webhooks.list(limit=min(limit, 100)), limit)))
    if json_output:
        emit_json(data)
        return
    for webhook in data:
        typer.echo(_webhook_line(webhook))


def list_deliveries(
    webhook_id: Annotated[str, typer.Argument(help="whk_…")],
    limit: Annotated[int, typer.Option(help="How many attempts, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The endpoint's delivery attempts, newest first."""
    data = fetch(
        lambda c: list(itertools.islice(c.webhooks.deliveries(webhook_id, limit=min(limit, 100)), limit))
    )
    if json_output:
        emit_json(data)
        return
    for delivery in data:
        typer.echo(_delivery_line(delivery))


def send_test(
    webhook_id: Annotated[str, typer.Argument(help="whk_…")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Queue a webhook.test event for the endpoint (its result shows in `deliveries`)."""
    data = fetch(lambda c: c.webhooks.test(webhook_id))
    emit_json(data) if json_output else typer.echo(f"queued {data['eventId']} ({data['id']})")


def remove_webhook(
    webhook_id: Annotated[str, typer.Argument(help="whk_…")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Delete the endpoint with its deliveries."""
    data = fetch(lambda c: c.webhooks.delete(webhook_id))
    emit_json(data) if json_output else typer.echo(f"removed {_webhook_line(data)}")


def register_webhooks(app: typer.Typer) -> None:
    webhooks.command("add")(with_api_key(add_webhook))
    webhooks.command("list")(with_api_key(list_webhooks))
    webhooks.command("deliveries")(with_api_key(list_deliveries))
    webhooks.command("test")(with_api_key(send_test))
    webhooks.command("remove")(with_api_key(remove_webhook))
    app.add_typer(webhooks, name="webhooks")
