"""``threadline runs``: start, follow, show, list and cancel runs."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.client.common import (
    RESPONSE_FORMAT_HELP,
    call,
    fetch,
    parse_metadata,
    read_json,
    response_format_option,
    with_api_key,
)
from threadline.cli.output import emit_json, fail

if TYPE_CHECKING:
    from threadline_client import Threadline
    from threadline_client.types import RunEvent

runs = typer.Typer(no_args_is_help=True, help="Agent runs (through the API).")

_ARGUMENTS_CHARS = 200
_RESULT_CHARS = 120
_REASONING_PREFIX = "… "


class Strategy(StrEnum):
    reject = "reject"
    enqueue = "enqueue"
    interrupt = "interrupt"


def run_line(run: dict[str, Any]) -> str:
    usage = run["usage"]
    return (
        f"{run['id']}  {run['status']:<9}  {run['model']}  "
        f"in {usage['inputTokens']} / out {usage['outputTokens']} tokens  {run['createdAt']}"
    )


def _short(value: Any, limit: int) -> str:
    """One line of at most ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _LiveRun:
    """A run's events for people: the answer's text as it arrives (stdout), reasoning on stderr (lines
    prefixed with "… ", dim on a terminal), a line per tool call, artifact and the end (stdout), errors on
    stderr. A line left open by one kind of text is ended before anything else is printed, so stdout and
    stderr each stay whole lines, together on a terminal or apart when piped."""

    def __init__(self) -> None:
        self._open: str | None = None  # "text" or "reasoning": the kind whose line is unfinished
        self._shown: set[str] = set()  # messages whose text was printed from their chunks

    def show(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "message_started":
            self.end_line()
        elif kind == "text_chunk":
            self._shown.add(event["messageId"])
            self._flow("text", event["delta"])
        elif kind == "text_complete":
            if event["messageId"] not in self._shown and event["text"]:
                self._flow("text", event["text"])  # a model that streamed no chunks
            self._shown.add(event["messageId"])
        elif kind == "reasoning_chunk":
            self._flow("reasoning", event["delta"])
        elif kind == "tool_call_start":
            self._line(f"→ {event['name']}({_short(event['arguments'], _ARGUMENTS_CHARS)})")
        elif kind == "tool_call_complete":
            failed = " failed" if event["isError"] else ""
            self._line(f"← {event['name']}{failed}: {_short(event['result'], _RESULT_CHARS)}")
        elif kind == "artifact":
            size = len(event["content"].encode())
            self._line(f"[artifact {event['name']} ({event['mimeType']}, {size} bytes)]")
        elif kind == "error":
            self._line(f"error {event['code']}: {event['message']}", err=True)
        elif kind == "run_requires_action":
            self._waiting(event)
        elif kind == "run_completed":
            used = event["usage"]
            tokens = f"in {used['inputTokens']} tokens / out {used['outputTokens']} tokens"
            self._line(f"run {event['status']} ({tokens})")

    def _waiting(self, event: dict[str, Any]) -> None:
        action = event["requiredAction"]
        calls = ", ".join(f"{call['name']} {call['id']}" for call in action["toolCalls"])
        command = "approve" if action["type"] == "approve_tool_calls" else "submit-outputs"
        what = "approval of" if command == "approve" else "the outputs of"
        self._line(f"waiting for {what} {calls} until {action['expiresAt']}", err=True)
        self._line(f"  (threadline runs {command} {event['runId']} …)", err=True)

    def end_line(self) -> None:
        if self._open is not None:
            typer.echo("", err=self._open == "reasoning")
            self._open = None

    def _line(self, text: str, *, err: bool = False) -> None:
        self.end_line()
        typer.echo(text, err=err)

    def _flow(self, kind: str, text: str) -> None:
        """Text that continues the open line of its kind (reasoning lines start with the prefix)."""
        if self._open is not None and self._open != kind:
            self.end_line()
        reasoning = kind == "reasoning"
        written: list[str] = []
        for i, piece in enumerate(text.split("\n")):
            if i:
                written.append("\n")
                self._open = None
            if piece:
                if reasoning and self._open is None:
                    written.append(_REASONING_PREFIX)
                written.append(piece)
                self._open = kind
        if written:
            out = "".join(written)
            typer.echo(typer.style(out, dim=True) if reasoning else out, nl=False, err=reasoning)


def _follow(run_id: str, events: Callable[[Threadline], Iterator[RunEvent]], json_output: bool) -> None:
    """Prints a run's events until its end; exits 0 when it completed, 1 otherwise."""
    view = _LiveRun()

    def work(client: Threadline) -> str | None:
        status: str | None = None
        try:
            for typed in events(client):
                event = typed.to_dict()
                if event["type"] == "run_completed":
                    status = event["status"]
                if json_output:
                    typer.echo(json.dumps(event, ensure_ascii=False))
                else:
                    view.show(event)
        finally:
            view.end_line()
        return status

    try:
        status = call(work)
    except KeyboardInterrupt:
        view.end_line()
        typer.echo(
            f"stopped following {run_id}; the run goes on (threadline runs cancel {run_id} to end it)",
            err=True,
        )
        raise typer.Exit(130) from None
    if status is None:
        fail(f"the stream of {run_id} ended before the run did (was its thread deleted?)")
    raise typer.Exit(0 if status == "completed" else 1)


def tool_entries(text: str) -> list[dict[str, Any]]:
    """``--tools``: a JSON array of objects (or ``@FILE`` holding one); the entries themselves are the
    API's to check."""
    entries = read_json("--tools", text)
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        fail("--tools takes a JSON array of tool entries (objects)", code=2)
    return entries


def create_run(
    thread_id: Annotated[str, typer.Argument(help="Thread id (thr_…).")],
    input: Annotated[
        str | None, typer.Option("--input", help="Appended to the thread as a user message first.")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="provider/model; default: the organization's default model.")
    ] = None,
    instructions: Annotated[
        str | None, typer.Option(help="The system prompt; default: the organization's instructions.")
    ] = None,
    strategy: Annotated[
        Strategy | None,
        typer.Option(
            help="While the thread has an active run: reject (the default: refused), enqueue (start after "
            "it) or interrupt (cancel it)."
        ),
    ] = None,
    metadata: Annotated[list[str] | None, typer.Option("--metadata", help="KEY=VALUE, repeatable.")] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="The tools offered, a JSON array of entries as the API takes them (@FILE reads a file); "
            "default: the built-in tools."
        ),
    ] = None,
    action_timeout: Annotated[
        int | None, typer.Option(help="Seconds the run may wait for its caller (1-86400, default 600).")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Run this agent (agt_…); the options given here override its fields."),
    ] = None,
    agent_version: Annotated[
        int | None, typer.Option(help="The agent's version to run (with --agent); default: its latest.")
    ] = None,
    response_format: Annotated[str | None, typer.Option(help=RESPONSE_FORMAT_HELP)] = None,
    stream: Annotated[
        bool, typer.Option("--stream", help="Follow the run live until it ends (Ctrl-C stops following).")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="The run as JSON; with --stream, one JSON event per line.")
    ] = False,
) -> None:
    """Start a run on a thread. With --stream, print it live as it happens; exit status: 0 when the run
    completed, 1 when it failed or was cancelled (or on an error)."""
    values = parse_metadata(metadata or [])
    entries = tool_entries(tools) if tools is not None else None
    answer_format = response_format_option(response_format) if response_format is not None else None
    run = fetch(
        lambda c: c.runs.create(
            thread_id,
            input=input,
            model=model,
            instructions=instructions,
            metadata=values or None,
            multitask_strategy=strategy.value if strategy is not None else None,
            tools=entries,
            action_timeout_seconds=action_timeout,
            agent_id=agent,
            agent_version=agent_version,
            response_format=answer_format,
        )
    )
    if not stream:
        emit_json(run) if json_output else typer.echo(run_line(run))
        return
    if not json_output:
        typer.echo(f"{run['id']}  {run['status']}  {run['model']}", err=True)
    _follow(run["id"], lambda c: c.runs.stream(run["id"]), json_output)


def stream_run(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    cursor: Annotated[str | None, typer.Option(help="Resume strictly after this event's cursor.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON event per line.")] = False,
) -> None:
    """Print a run's events, live until it ends (a finished run's are replayed); reconnects by itself.
    Exit status: 0 when the run completed, 1 when it failed or was cancelled (or on an error)."""
    _follow(run_id, lambda c: c.runs.stream(run_id, cursor=cursor), json_output)


def show_run(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A run and its artifacts."""
    run, found = fetch(lambda c: (c.runs.get(run_id), list(c.artifacts.list(run_id, limit=100))))
    if json_output:
        emit_json({"run": run, "artifacts": found})
        return
    typer.echo(run_line(run))
    typer.echo(f"thread {run['threadId']}  started {run['startedAt']}  ended {run['endedAt']}")
    if run["error"] is not None:
        typer.echo(f"error {run['error']['code']}: {run['error']['message']}")
    for artifact in found:
        typer.echo(
            f"{artifact['id']}  {artifact['name']}  ({artifact['mimeType']}, {artifact['size']} bytes)"
        )


def list_runs(
    thread_id: Annotated[str, typer.Argument(help="Thread id (thr_…).")],
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The thread's newest runs."""
    data = fetch(lambda c: list(itertools.islice(c.runs.list(thread_id, limit=min(limit, 100)), limit)))
    if json_output:
        emit_json(data)
        return
    for run in data:
        typer.echo(run_line(run))


def cancel_run(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """End a queued or running run at once (an error if it has already ended)."""
    run = fetch(lambda c: c.runs.cancel(run_id))
    emit_json(run) if json_output else typer.echo(run_line(run))


def stream_token(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    ttl: Annotated[int | None, typer.Option("--ttl", help="Seconds it can open the stream (1-3600).")] = None,
    origins: Annotated[
        list[str] | None, typer.Option("--origin", help="An origin allowed to use it (repeatable).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Mint a stream token: a browser reads this run's stream with ?token= and no secret key."""
    minted = fetch(lambda c: c.runs.create_stream_token(run_id, ttl_seconds=ttl, origins=origins or None))
    if json_output:
        emit_json(minted)
        return
    typer.echo(minted["token"])
    typer.echo(f"expires {minted['expiresAt']}; open /v1/runs/{run_id}/stream?token=<token>", err=True)


def register_runs(app: typer.Typer) -> None:
    runs.command("create")(with_api_key(create_run))
    runs.command("stream")(with_api_key(stream_run))
    runs.command("show")(with_api_key(show_run))
    runs.command("list")(with_api_key(list_runs))
    runs.command("cancel")(with_api_key(cancel_run))
    runs.command("stream-token")(with_api_key(stream_token))
    app.add_typer(runs, name="runs")
