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
    register_automations(app)


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


automations = typer.Typer(
    no_args_is_help=True, help="Automations: runs on a schedule or on logs (through the API)."
)

_LOG_OPTIONS = ("--project-id", "--level", "--contains", "--cooldown-seconds")


def _trigger_text(trigger: dict[str, Any]) -> str:
    if trigger["type"] == "schedule":
        return f"cron {trigger['cron']!r} {trigger['timezone']}"
    parts = [f"on log >= {trigger['level']}"]
    if trigger["projectId"] is not None:
        parts.append(f"in {trigger['projectId']}")
    if trigger["contains"] is not None:
        parts.append(f"containing {trigger['contains']!r}")
    parts.append(f"cooldown {trigger['cooldownSeconds']}s")
    return " ".join(parts)


def _automation_line(automation: dict[str, Any]) -> str:
    state = "enabled" if automation["enabled"] else "disabled"
    return f"{automation['id']}  {state:<8}  {_trigger_text(automation['trigger'])}  {automation['name']}"


def _log_fields(
    project_id: str | None, level: str | None, contains: str | None, cooldown_seconds: int | None
) -> dict[str, Any]:
    """The log-trigger options given (an empty --project-id or --contains: null, i.e. any)."""
    given = {
        "projectId": project_id,
        "level": level,
        "contains": contains,
        "cooldownSeconds": cooldown_seconds,
    }
    return {
        name: (value or None) if name in ("projectId", "contains") else value
        for name, value in given.items()
        if value is not None
    }


def _trigger(
    current: dict[str, Any] | None,
    cron: str | None,
    timezone: str | None,
    on_log: bool,
    log_fields: dict[str, Any],
) -> dict[str, Any] | None:
    """The whole trigger to send (PATCH replaces it), None to keep ``current``; exits 2 on a mix of types.
    --cron or --on-log picks the type; without them the options change the current trigger's own fields.
    A new type starts from its defaults; the current type keeps the fields no option names."""
    if cron is not None and on_log:
        fail("--cron (a schedule) and --on-log (a log trigger) exclude each other", code=2)
    kind = "schedule" if cron is not None else "log" if on_log else current["type"] if current else None
    if kind is None:
        fail("a trigger is required: --cron (a schedule) or --on-log (a log trigger)", code=2)
    if kind == "schedule" and log_fields:
        fail(f"{', '.join(_LOG_OPTIONS)} go with a log trigger (--on-log)", code=2)
    if kind == "log" and timezone is not None:
        fail("--timezone goes with a schedule (--cron)", code=2)
    schedule_fields = {
        name: value for name, value in (("cron", cron), ("timezone", timezone)) if value is not None
    }
    changed = schedule_fields if kind == "schedule" else log_fields
    if current is not None and current["type"] == kind:
        return {**current, **changed} if changed else None
    return {"type": kind, **changed}


def _action(prompt: str | None, thread_id: str | None, model: str | None) -> dict[str, Any]:
    """The action options given (an empty --thread-id or --model: null)."""
    given = {"prompt": prompt, "threadId": thread_id, "model": model}
    return {
        name: (value or None) if name != "prompt" else value
        for name, value in given.items()
        if value is not None
    }


def list_automations(
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The organization's newest automations."""
    data = _call(lambda c: list(itertools.islice(c.automations.iterate(), limit)))
    if json_output:
        emit_json(data)
        return
    for automation in data:
        typer.echo(_automation_line(automation))


def show_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """An automation: its trigger, its action and its last firing."""
    data = _call(lambda c: c.automations.get(automation_id))
    if json_output:
        emit_json(data)
        return
    action = data["action"]
    typer.echo(_automation_line(data))
    typer.echo(
        f"thread {action['threadId'] or '(a new one per firing)'}  model {action['model'] or '(default)'}"
    )
    typer.echo(f"last triggered {data['lastTriggeredAt'] or 'never'}  next run {data['nextRunAt'] or '-'}")
    if data["lastError"] is not None:
        typer.echo(f"last error {data['lastError']['code']}: {data['lastError']['message']}")
    typer.echo(f"prompt: {action['prompt']}")


_Cron = Annotated[
    str | None,
    typer.Option(help="Schedule: five cron fields (minute hour day month weekday) or @hourly, @daily, …"),
]
_Timezone = Annotated[str | None, typer.Option(help="Schedule: the IANA time zone of --cron (default UTC).")]
_OnLog = Annotated[bool, typer.Option("--on-log", help="Fire when an ingested log record matches.")]
_ProjectId = Annotated[str | None, typer.Option(help="Log trigger: only this project's records.")]
_Level = Annotated[
    str | None, typer.Option(help="Log trigger: records at this level or above (default error).")
]
_Contains = Annotated[
    str | None, typer.Option(help="Log trigger: only messages containing this text (case-insensitive).")
]
_Cooldown = Annotated[
    int | None,
    typer.Option(help="Log trigger: fire at most once per this many seconds (default 300).", min=0),
]
_ThreadId = Annotated[str | None, typer.Option(help="Run on this thread (default: a new thread per firing).")]
_Model = Annotated[str | None, typer.Option(help="provider/model (default: the organization's).")]


def create_automation(
    name: Annotated[str, typer.Option(help="A descriptive label (up to 200 characters).")],
    prompt: Annotated[str, typer.Option(help="The run's input (a log trigger appends the record).")],
    cron: _Cron = None,
    timezone: _Timezone = None,
    on_log: _OnLog = False,
    project_id: _ProjectId = None,
    level: _Level = None,
    contains: _Contains = None,
    cooldown_seconds: _Cooldown = None,
    thread_id: _ThreadId = None,
    model: _Model = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it disabled.")] = False,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create an automation: --cron (with --timezone) for a schedule, or --on-log (with --project-id,
    --level, --contains, --cooldown-seconds) for a log trigger."""
    trigger = _trigger(
        None, cron, timezone, on_log, _log_fields(project_id, level, contains, cooldown_seconds)
    )
    assert trigger is not None  # a new trigger is never "keep the current one"
    action = _action(prompt, thread_id, model)
    data = _call(
        lambda c: c.automations.create(
            name=name, trigger=trigger, action=action, enabled=False if disabled else None
        )
    )
    emit_json(data) if json_output else typer.echo(_automation_line(data))


def update_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    name: Annotated[str | None, typer.Option(help="A new label.")] = None,
    enabled: Annotated[bool | None, typer.Option("--enable/--disable", help="Turn it on or off.")] = None,
    cron: _Cron = None,
    timezone: _Timezone = None,
    on_log: _OnLog = False,
    project_id: Annotated[
        str | None, typer.Option(help="Log trigger: only this project's ('': any).")
    ] = None,
    level: _Level = None,
    contains: Annotated[str | None, typer.Option(help="Log trigger: text in the message ('': any).")] = None,
    cooldown_seconds: _Cooldown = None,
    prompt: Annotated[str | None, typer.Option(help="The run's input.")] = None,
    thread_id: Annotated[
        str | None, typer.Option(help="Run on this thread ('': a new thread per firing).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="provider/model ('': the organization's).")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Change what the options give and keep the rest: the trigger's and the action's other fields stay as
    they are (the current automation is read first). --cron or --on-log switches the trigger's type."""
    log_fields = _log_fields(project_id, level, contains, cooldown_seconds)
    action_fields = _action(prompt, thread_id, model)

    def work(client: Threadline) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if enabled is not None:
            changes["enabled"] = enabled
        if cron is not None or timezone is not None or on_log or log_fields or action_fields:
            current = client.automations.get(automation_id)
            trigger = _trigger(current["trigger"], cron, timezone, on_log, log_fields)
            if trigger is not None:
                changes["trigger"] = trigger
            if action_fields:
                changes["action"] = {**current["action"], **action_fields}
        if not changes:
            fail("nothing to change: give at least one option", code=2)
        return client.automations.update(automation_id, **changes)

    data = _call(work)
    emit_json(data) if json_output else typer.echo(_automation_line(data))


def delete_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Delete an automation (the runs it started stay)."""
    data = _call(lambda c: c.automations.delete(automation_id))
    emit_json(data) if json_output else typer.echo(_automation_line(data))


def trigger_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    json_output: Annotated[bool, typer.Option("--json", help="The run as JSON.")] = False,
) -> None:
    """Fire an automation now (enabled or not, cooldown or not) and print the run it started
    (`threadline runs stream RUN_ID` follows it)."""
    run = _call(lambda c: c.automations.trigger(automation_id))
    emit_json(run) if json_output else typer.echo(_run_line(run))


def register_automations(app: typer.Typer) -> None:
    automations.command("list")(list_automations)
    automations.command("show")(show_automation)
    automations.command("create")(create_automation)
    automations.command("update")(update_automation)
    automations.command("delete")(delete_automation)
    automations.command("trigger")(trigger_automation)
    app.add_typer(automations, name="automations")


def _transaction_line(entry: dict[str, Any]) -> str:
    run = f"  run {entry['runId']}" if entry["runId"] is not None else ""
    return (
        f"{entry['id']}  {entry['type']:<6}  {entry['amount']:>+10}  balance {entry['balanceAfter']:>10}  "
        f"{entry['createdAt']}  {entry['description']}{run}"
    )


def show_balance(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The organization's credit balance."""
    data = _call(lambda c: c.billing.balance())
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
    body = _call(lambda c: c.billing.transactions(page=page, limit=limit))
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
    billing.command("balance")(show_balance)
    billing.command("transactions")(list_transactions)
