"""``threadline logs``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from threadline_client import Threadline

from threadline.cli.client.common import call, with_api_key

logs = typer.Typer(no_args_is_help=True, help="Logs and events (through the API).")


def _log_line(record: dict[str, Any]) -> str:
    what = record["message"] if record["kind"] == "log" else f"event {record['name']}"
    return f"{record['receivedAt']}  {record['level']:<5}  {record['projectId']}  {what}"


def tail_logs(
    project_id: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    level: Annotated[str | None, typer.Option(help="This level and above.")] = None,
    kind: Annotated[str | None, typer.Option(help="log or event.")] = None,
    q: Annotated[str | None, typer.Option(help="Text in the message.")] = None,
    since: Annotated[str | None, typer.Option(help="Start from records received since (ISO 8601).")] = None,
    cursor: Annotated[str | None, typer.Option(help="Resume after this cursor.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Follow the organization's logs live (Ctrl-C to stop); reconnects by itself."""

    def work(client: Threadline) -> None:
        for event in client.logs.stream(
            cursor=cursor, project_id=project_id, level=level, kind=kind, q=q, since=since
        ):
            record = event.to_dict()
            if json_output:
                typer.echo(json.dumps(record, ensure_ascii=False))
            else:
                typer.echo(_log_line(record))

    try:
        call(work)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def register_logs(app: typer.Typer) -> None:
    logs.command("tail")(with_api_key(tail_logs))
    app.add_typer(logs, name="logs")
