"""``threadline runs approve`` and ``threadline runs submit-outputs``: answering a run that waits for its
caller (``requires_action``) from a terminal.

The API takes every pending call of a wait in one request, so the commands read the run's
``requiredAction`` first and decide each of its calls: ``approve`` approves every pending call but those
named by ``--reject`` (or all with ``--reject-all``), so the common case (one call, "yes") is the bare
command; ``submit-outputs`` needs an output for each call and names the missing ones before sending."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.client.common import call, plain, with_api_key
from threadline.cli.client.runs import run_line, runs
from threadline.cli.output import emit_json, fail

if TYPE_CHECKING:
    from threadline_client import Threadline


def _pending(client: Threadline, run_id: str, kind: str) -> list[str]:
    """The ids of the calls the run waits on for ``kind``; exits 1 saying what it waits for otherwise."""
    run = client.runs.get(run_id)
    action = run.required_action
    if run.status != "requires_action" or action is None:
        fail(f"{run_id} is {run.status}, not waiting for its caller")
    if action.type != kind:
        fail(f"{run_id} waits for {action.type}, not {kind}")
    return [tool_call.id for tool_call in action.tool_calls]


def approve(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    reject: Annotated[
        list[str] | None, typer.Option("--reject", help="A tool call id to reject (repeatable).")
    ] = None,
    reject_all: Annotated[bool, typer.Option("--reject-all", help="Reject every pending call.")] = False,
    reason: Annotated[
        str | None, typer.Option(help="Why, for the rejected calls (the model reads it).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Decide the tool calls a run waits to have approved: every pending call is approved except those
    rejected. An approved call executes; a rejected one fails with the reason, and the model goes on."""
    named = set(reject or [])

    def work(client: Threadline) -> Any:
        pending = _pending(client, run_id, "approve_tool_calls")
        unknown = sorted(named - set(pending))
        if unknown:
            fail(f"not pending on {run_id}: {', '.join(unknown)} (pending: {', '.join(pending)})", code=2)
        refused = set(pending) if reject_all else named
        approved = [key for key in pending if key not in refused]
        return client.runs.approve(run_id, approved=approved, rejected=dict.fromkeys(refused, reason))

    run = plain(call(work))
    emit_json(run) if json_output else typer.echo(run_line(run))


def _output(text: str) -> Any:
    """JSON when it parses, else the text itself (an output is a string or any JSON value)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def submit_outputs(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    output: Annotated[
        list[str],
        typer.Option(
            "--output",
            help="CALL_ID=VALUE for each pending call; VALUE is JSON when it parses, else a string.",
        ),
    ],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Send the outputs of the function calls a run waits on (one for each pending call)."""
    outputs: dict[str, Any] = {}
    for pair in output:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            fail(f"--output takes CALL_ID=VALUE, not {pair[:40]!r}", code=2)
        outputs[key] = _output(value)

    def work(client: Threadline) -> Any:
        missing = [key for key in _pending(client, run_id, "submit_tool_outputs") if key not in outputs]
        if missing:
            fail(f"no --output for {', '.join(missing)}: every pending call is answered at once", code=2)
        return client.runs.submit_tool_outputs(run_id, outputs)

    run = plain(call(work))
    emit_json(run) if json_output else typer.echo(run_line(run))


def register_run_actions() -> None:
    runs.command("approve")(with_api_key(approve))
    runs.command("submit-outputs")(with_api_key(submit_outputs))
