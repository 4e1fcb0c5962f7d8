"""Client commands: the API, through the SDK, with THREADLINE_API_KEY and THREADLINE_BASE_URL."""

from __future__ import annotations

import json
from collections.abc import Callable
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
