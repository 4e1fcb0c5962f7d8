"""``threadline logs``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.client.common import call, with_api_key
from threadline.cli.client.terminal import dim, level

if TYPE_CHECKING:
    from threadline_client import Threadline

logs = typer.Typer(no_args_is_help=True, help="Logs and events (through the API).")


def _log_line(record: dict[str, Any]) -> str:
    what = record["message"] if record["kind"] == "log" else f"event {record['name']}"
    return f"{record['receivedAt']}  {level(record['level'])}  {record['projectId']}  {what}"


def _details(record: dict[str, Any]) -> list[str]:
    """What --verbose adds under a record: its attributes (or an event's properties), trace and span."""
    values = dict(record["attributes"] or {})
    if record["kind"] == "event":
        values = {
            **(record["properties"] or {}),
            **({"distinctId": record["distinctId"]} if record["distinctId"] else {}),
        }
    for name in ("traceId", "spanId"):
        if record.get(name):
            values[name] = record[name]
    return [dim(f"    {key}={json.dumps(value, ensure_ascii=False)}") for key, value in values.items()]


def tail_logs(
    project_id: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    level_: Annotated[str | None, typer.Option("--level", help="This level and above.")] = None,
    kind: Annotated[str | None, typer.Option(help="log or event.")] = None,
    q: Annotated[str | None, typer.Option("--query", "-q", help="Text in the message.")] = None,
    since: Annotated[str | None, typer.Option(help="Start from records received since (ISO 8601).")] = None,
    cursor: Annotated[str | None, typer.Option(help="Resume after this cursor.")] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Each record's attributes, trace and span too.")
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Follow the organization's logs live (Ctrl-C to stop); reconnects by itself."""

    def work(client: Threadline) -> None:
        client.logs.list(limit=1, project_id=project_id)  # the server answers and the key is good
        typer.echo(f"connected to {client.base_url}; waiting for records (Ctrl-C to stop)", err=True)
        for event in client.logs.stream(
            cursor=cursor, project_id=project_id, level=level_, kind=kind, q=q, since=since
        ):
            record = event.to_dict()
            if json_output:
                typer.echo(json.dumps(record, ensure_ascii=False))
                continue
            if record.get("type") != "log_record":
                continue  # a kind of event this version does not know
            typer.echo(_log_line(record))
            if verbose:
                for line in _details(record):
                    typer.echo(line)

    try:
        call(work)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def register_logs(app: typer.Typer) -> None:
    logs.command("tail")(with_api_key(tail_logs))
    app.add_typer(logs, name="logs")
