"""``threadline billing balance``, ``transactions`` and ``export`` (the operator's ``grant`` is in
``cli.operator``)."""

from __future__ import annotations

import csv
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from threadline.cli.client.common import call, fetch, with_api_key
from threadline.cli.output import emit_json, fail
from threadline.cli.progress import Progress

if TYPE_CHECKING:
    from threadline_client import Threadline

# The API's largest page: an export of a long ledger makes as few requests as it can.
_EXPORT_PAGE = 100
_COLUMNS = ("id", "type", "amount", "balanceAfter", "description", "runId", "createdAt")


class ExportFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"


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


def export_transactions(
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write here instead of standard output."),
    ] = None,
    format_: Annotated[
        ExportFormat, typer.Option("--format", help="csv (with a header row) or jsonl (one entry a line).")
    ] = ExportFormat.csv,
) -> None:
    """The whole ledger, newest first, for a spreadsheet or another system; progress on standard error.

    Entries that arrive during the export push older ones to later pages: each entry is written once
    all the same, and the export holds every entry that existed when it began."""
    progress = Progress("export")
    target: TextIO = sys.stdout
    try:
        if output is not None:
            target = output.open("w", encoding="utf-8", newline="")
    except OSError as error:
        fail(f"cannot write {output}: {error.strerror}", code=2)
    try:
        written = call(lambda client: _export(client, target, format_, progress))
    finally:
        if target is not sys.stdout:
            target.close()
    progress.done()
    where = f" to {output}" if output is not None else ""
    typer.echo(f"exported {written:,} entries{where} in {progress.elapsed:.1f} s", err=True)


def _export(client: Threadline, target: TextIO, format_: ExportFormat, progress: Progress) -> int:
    """The client's walk over the pages writes each entry once, even one pushed to a later page by an
    entry that arrived meanwhile; the first page's total is what the export set out to write."""
    from threadline_client.types import LedgerPagination

    writer = csv.writer(target) if format_ is ExportFormat.csv else None
    if writer is not None:
        writer.writerow(_COLUMNS)
    ledger = client.billing.transactions(limit=_EXPORT_PAGE)
    total = ledger.pagination.total if isinstance(ledger.pagination, LedgerPagination) else 0
    written = 0
    for entry in ledger:
        row = entry.to_dict()
        if writer is not None:
            writer.writerow(["" if row[column] is None else row[column] for column in _COLUMNS])
        else:
            target.write(json.dumps(row) + "\n")
        written += 1
        progress.fraction(written, max(total, written), "entries")
    return written


def register_billing(billing: typer.Typer) -> None:
    """Into the ``billing`` group the operator's ``grant`` shares (see ``threadline.cli``)."""
    billing.command("balance")(with_api_key(show_balance))
    billing.command("transactions")(with_api_key(list_transactions))
    billing.command("export")(with_api_key(export_transactions))
