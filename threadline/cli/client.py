"""Client commands: the API, through the SDK, with THREADLINE_API_KEY and THREADLINE_BASE_URL."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from threadline.cli.output import emit_json, fail
from threadline.client import Threadline, ThreadlineError

T = TypeVar("T")
keys = typer.Typer(no_args_is_help=True, help="API keys (through the API).")


def _call(work: Callable[[Threadline], T]) -> T:
    try:
        with Threadline() as client:
            return work(client)
    except ThreadlineError as error:
        fail(str(error))


def _key_line(key: dict[str, Any]) -> str:
    state = "revoked" if key["revokedAt"] else "active"
    return f"{key['id']}  {key['type']:<6}  {key['prefix']}…{key['last4']}  {state:<7}  {key['name']}"


def me(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Which organization and key the configured credential stands for."""
    data = _call(lambda c: c.me())
    if json_output:
        emit_json(data)
    else:
        typer.echo(
            f"{data['organization']['id']}  {data['organization']['name']}  via {_key_line(data['key'])}"
        )


def create_key(
    name: Annotated[str, typer.Option(help="A descriptive label.")],
    type: Annotated[str, typer.Option("--type", help="secret or public.")] = "secret",
    project_id: Annotated[str | None, typer.Option(help="Project of a public key.")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a key and print its value, the only time it is shown."""
    data = _call(lambda c: c.keys.create(name=name, type=type, project_id=project_id))
    if json_output:
        emit_json(data)
    else:
        typer.echo(_key_line(data))
        typer.echo(data["key"])


def list_keys(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every key of the organization, newest first."""
    data = _call(lambda c: list(c.keys.iterate()))
    if json_output:
        emit_json(data)
        return
    for key in data:
        typer.echo(_key_line(key))


def revoke_key(key_id: Annotated[str, typer.Argument(help="Key id (key_…).")]) -> None:
    """Revoke a key; every server process refuses it within a second."""
    data = _call(lambda c: c.keys.revoke(key_id))
    typer.echo(_key_line(data))


def register(app: typer.Typer) -> None:
    app.command()(me)
    keys.command("create")(create_key)
    keys.command("list")(list_keys)
    keys.command("revoke")(revoke_key)
    app.add_typer(keys, name="keys")
    register_threads(app)
    register_logs(app)
    register_runs(app)


threads = typer.Typer(no_args_is_help=True, help="Threads (through the API).")
search = typer.Typer(no_args_is_help=True, help="Full-text search (through the API).")


def _thread_line(thread: dict[str, Any]) -> str:
    title = thread["title"] if thread["title"] is not None else "(untitled)"
    return f"{thread['id']}  {thread['messageCount']:>5} msgs  {thread['updatedAt']}  {title}"


def _parse_metadata(pairs: list[str]) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            fail(f"metadata must be KEY=VALUE, got {pair!r}", code=2)
        metadata[key] = value
    return metadata


def list_threads(
    metadata: Annotated[
        list[str] | None, typer.Option("--metadata", help="KEY=VALUE filter, repeatable.")
    ] = None,
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The newest threads."""
    wanted = _parse_metadata(metadata or [])

    def work(client: Threadline) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for thread in client.threads.iterate(metadata=wanted):
            found.append(thread)
            if len(found) >= limit:
                break
        return found

    data = _call(work)
    if json_output:
        emit_json(data)
        return
    for thread in data:
        typer.echo(_thread_line(thread))


def show_thread(
    thread_id: Annotated[str, typer.Argument(help="Thread id (thr_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A thread and its messages, oldest first."""
    thread, messages = _call(lambda c: (c.threads.get(thread_id), list(c.messages.iterate(thread_id))))
    if json_output:
        emit_json({"thread": thread, "messages": messages})
        return
    typer.echo(_thread_line(thread))
    for message in messages:
        typer.echo(f"\n[{message['role']}] {message['createdAt']}\n{message['content']}")


def create_thread(
    title: Annotated[str | None, typer.Option(help="Title (up to 256 characters).")] = None,
    metadata: Annotated[list[str] | None, typer.Option("--metadata", help="KEY=VALUE, repeatable.")] = None,
    message: Annotated[str | None, typer.Option(help="A first user message.")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a thread (optionally with a first user message)."""
    values = _parse_metadata(metadata or [])

    def work(client: Threadline) -> dict[str, Any]:
        thread = client.threads.create(title=title, metadata=values)
        if message is not None:
            client.messages.create(thread["id"], content=message)
            thread = client.threads.get(thread["id"])
        return thread

    data = _call(work)
    emit_json(data) if json_output else typer.echo(_thread_line(data))


def _print_hits(body: dict[str, Any], describe: Callable[[dict[str, Any]], str]) -> None:
    pagination = body["pagination"]
    for hit in body["data"]:
        typer.echo(f"{describe(hit)}\n    {hit['snippet']}")
    typer.echo(
        f"page {pagination['page']} of {pagination['totalPages']} ({pagination['totalResults']} results)",
        err=True,
    )


def search_threads(
    q: Annotated[str, typer.Argument(help='Words, "phrases", OR, -exclusions.')],
    page: Annotated[int, typer.Option(min=1)] = 1,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Threads whose title or metadata match."""
    body = _call(lambda c: c.search.threads(q, page=page))
    emit_json(body) if json_output else _print_hits(body, _thread_line)


def search_messages(
    q: Annotated[str, typer.Argument(help='Words, "phrases", OR, -exclusions.')],
    thread_id: Annotated[str | None, typer.Option(help="Only this thread.")] = None,
    role: Annotated[str | None, typer.Option(help="Only this role.")] = None,
    page: Annotated[int, typer.Option(min=1)] = 1,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Messages whose content matches."""
    body = _call(lambda c: c.search.messages(q, page=page, thread_id=thread_id, role=role))
    if json_output:
        emit_json(body)
    else:
        _print_hits(body, lambda hit: f"{hit['id']}  {hit['threadId']}  [{hit['role']}]")


def register_threads(app: typer.Typer) -> None:
    threads.command("list")(list_threads)
    threads.command("show")(show_thread)
    threads.command("create")(create_thread)
    search.command("threads")(search_threads)
    search.command("messages")(search_messages)
    app.add_typer(threads, name="threads")
    app.add_typer(search, name="search")


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
        for record in client.logs.tail(
            cursor=cursor, project_id=project_id, level=level, kind=kind, q=q, since=since
        ):
            if json_output:
                typer.echo(json.dumps(record, ensure_ascii=False))
            else:
                typer.echo(_log_line(record))

    try:
        _call(work)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def register_logs(app: typer.Typer) -> None:
    logs.command("tail")(tail_logs)
    app.add_typer(logs, name="logs")


runs = typer.Typer(no_args_is_help=True, help="Agent runs (through the API).")

_ARGUMENTS_CHARS = 200
_RESULT_CHARS = 120
_REASONING_PREFIX = "… "


class Strategy(StrEnum):
    reject = "reject"
    enqueue = "enqueue"
    interrupt = "interrupt"


def _run_line(run: dict[str, Any]) -> str:
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
        elif kind == "run_completed":
            used = event["usage"]
            tokens = f"in {used['inputTokens']} tokens / out {used['outputTokens']} tokens"
            self._line(f"run {event['status']} ({tokens})")

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


def _follow(run_id: str, events: Callable[[Threadline], Iterator[dict[str, Any]]], json_output: bool) -> None:
    """Prints a run's events until its end; exits 0 when it completed, 1 otherwise."""
    view = _LiveRun()

    def work(client: Threadline) -> str | None:
        status: str | None = None
        try:
            for event in events(client):
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
        status = _call(work)
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
    stream: Annotated[
        bool, typer.Option("--stream", help="Follow the run live until it ends (Ctrl-C stops following).")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="The run as JSON; with --stream, one JSON event per line.")
    ] = False,
) -> None:
    """Start a run on a thread. With --stream, print it live as it happens; exit status: 0 when the run
    completed, 1 when it failed or was cancelled (or on an error)."""
    values = _parse_metadata(metadata or [])
    run = _call(
        lambda c: c.runs.create(
            thread_id,
            input=input,
            model=model,
            instructions=instructions,
            metadata=values or None,
            multitask_strategy=strategy.value if strategy is not None else None,
        )
    )
    if not stream:
        emit_json(run) if json_output else typer.echo(_run_line(run))
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
    run, found = _call(lambda c: (c.runs.get(run_id), list(c.artifacts.iterate(run_id))))
    if json_output:
        emit_json({"run": run, "artifacts": found})
        return
    typer.echo(_run_line(run))
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
    data = _call(lambda c: list(itertools.islice(c.runs.iterate(thread_id), limit)))
    if json_output:
        emit_json(data)
        return
    for run in data:
        typer.echo(_run_line(run))


def cancel_run(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """End a queued or running run at once (an error if it has already ended)."""
    run = _call(lambda c: c.runs.cancel(run_id))
    emit_json(run) if json_output else typer.echo(_run_line(run))


def register_runs(app: typer.Typer) -> None:
    runs.command("create")(create_run)
    runs.command("stream")(stream_run)
    runs.command("show")(show_run)
    runs.command("list")(list_runs)
    runs.command("cancel")(cancel_run)
    app.add_typer(runs, name="runs")
