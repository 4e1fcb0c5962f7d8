"""``threadline threads`` and ``threadline search``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.client.common import fetch, parse_metadata, with_api_key
from threadline.cli.client.terminal import highlighted, matched_metadata
from threadline.cli.output import emit_json

if TYPE_CHECKING:
    from threadline_client import Threadline
    from threadline_client.types import Thread

threads = typer.Typer(no_args_is_help=True, help="Threads (through the API).")
search = typer.Typer(no_args_is_help=True, help="Full-text search (through the API).")


def _thread_line(thread: dict[str, Any]) -> str:
    title = thread["title"] if thread["title"] is not None else "(untitled)"
    return f"{thread['id']}  {thread['messageCount']:>5} msgs  {thread['updatedAt']}  {title}"


def list_threads(
    metadata: Annotated[
        list[str] | None, typer.Option("--metadata", help="KEY=VALUE filter, repeatable.")
    ] = None,
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The newest threads."""
    wanted = parse_metadata(metadata or [])

    def work(client: Threadline) -> list[Thread]:
        found: list[Thread] = []
        for thread in client.threads.list(limit=min(limit, 100), metadata=wanted):
            found.append(thread)
            if len(found) >= limit:
                break
        return found

    data = fetch(work)
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
    thread, messages = fetch(
        lambda c: (c.threads.get(thread_id), list(c.messages.list(thread_id, limit=100)))
    )
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
    values = parse_metadata(metadata or [])

    def work(client: Threadline) -> Thread:
        thread = client.threads.create(title=title, metadata=values)
        if message is not None:
            client.messages.create(thread.id, content=message)
            thread = client.threads.get(thread.id)
        return thread

    data = fetch(work)
    emit_json(data) if json_output else typer.echo(_thread_line(data))


def _print_hits(body: dict[str, Any], describe: Callable[[dict[str, Any]], str]) -> None:
    """Each hit, its snippet under it (matches highlighted on a terminal) and, for a thread, the metadata
    values that matched, labelled with their keys."""
    pagination = body["pagination"]
    for hit in body["data"]:
        typer.echo(f"{describe(hit)}\n    {highlighted(hit['snippet'])}")
        if "threadId" not in hit:  # a thread: its title or its metadata values matched
            for label in matched_metadata(hit["snippet"], hit["metadata"]):
                typer.echo(f"    matched metadata: {label}")
    typer.echo(
        f"page {pagination['page']} of {pagination['totalPages']} ({pagination['totalResults']} results)",
        err=True,
    )


def search_threads(
    q: Annotated[str, typer.Argument(metavar="QUERY", help='Words, "phrases", OR, -exclusions.')],
    page: Annotated[int, typer.Option(min=1)] = 1,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Threads whose title or metadata match."""
    body = fetch(lambda c: c.search.threads(q, page=page))
    emit_json(body) if json_output else _print_hits(body, _thread_line)


def search_messages(
    q: Annotated[str, typer.Argument(metavar="QUERY", help='Words, "phrases", OR, -exclusions.')],
    thread_id: Annotated[str | None, typer.Option(help="Only this thread.")] = None,
    role: Annotated[str | None, typer.Option(help="Only this role.")] = None,
    page: Annotated[int, typer.Option(min=1)] = 1,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Messages whose content matches."""
    body = fetch(lambda c: c.search.messages(q, page=page, thread_id=thread_id, role=role))
    if json_output:
        emit_json(body)
    else:
        _print_hits(body, lambda hit: f"{hit['id']}  {hit['threadId']}  [{hit['role']}]")


def register_threads(app: typer.Typer) -> None:
    threads.command("list")(with_api_key(list_threads))
    threads.command("show")(with_api_key(show_thread))
    threads.command("create")(with_api_key(create_thread))
    search.command("threads")(with_api_key(search_threads))
    search.command("messages")(with_api_key(search_messages))
    app.add_typer(threads, name="threads")
    app.add_typer(search, name="search")
