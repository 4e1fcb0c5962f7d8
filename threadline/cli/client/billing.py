"""``threadline billing balance`` and ``transactions`` (the operator's ``grant`` is in ``cli.operator``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from threadline.cli.client.common import fetch, with_api_key
from threadline.cli.output import emit_json


def _transaction_line(entry: dict[str, Any]) -> str:
    run = f"  run {entry['runId']}" if entry["runId"] is not None else ""
    return (
        f"{entry['id']}  {entry['type']:<6}  {entry['amount']:>+10}  balance {entry['balanceAfter']:>10}  "
        f"{entry['createdAt']}  {entry['description']}{run}"
    )


def show_balance(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The organization's credit balance."""
    data = fetch(lambda c: c.billing.balance())
    if json_output:
        emit_json(data)
    else:
        typer.echo(f"{data['balance']} credits  (last entry {data['updatedAt'] or 'none'})")


def list_transactions(
    page: Annotated[int, typer.Option(min=1)] = 1,
    limit: Annotated[
        int | None, typer.Option(help="Entries per page (default 20, at most 100).", min=1)
    ] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The organization's ledger, newest first, one page at a time."""
    body = fetch(lambda c: c.billing.transactions(page=page, limit=limit))
    if json_output:
        emit_json(body)
        return
    for entry in body["data"]:
        typer.echo(_transaction_line(entry))
    pagination = body["pagination"]
    typer.echo(
        f"page {pagination['page']} of {pagination['totalPages']} ({pagination['total']} entries)", err=True
    )


def register_billing(billing: typer.Typer) -> None:
    """Into the ``billing`` group the operator's ``grant`` shares (see ``threadline.cli``)."""
    billing.command("balance")(with_api_key(show_balance))
    billing.command("transactions")(with_api_key(list_transactions))
