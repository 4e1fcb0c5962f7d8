"""What every client command shares: the client (threadline_client) from ``--api-key`` or the environment,
its results as plain JSON data for printing, its errors as exit status 1.

threadline_client (httpx, pydantic: ~210 ms of imports) is imported where a command runs, never at a
module's top: every ``threadline`` process builds all the commands, and the operator's (init, serve,
migrate…) and ``--help`` never call the API (tests/cli/test_startup.py)."""

from __future__ import annotations

import functools
import inspect
import json
import os
import typing
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from threadline.cli.output import fail

if TYPE_CHECKING:
    from threadline_client import Threadline

T = TypeVar("T")

_api_key: ContextVar[str | None] = ContextVar("api_key", default=None)

NO_KEY = (
    "no API key: set THREADLINE_API_KEY to a secret key (sk_…) or pass --api-key "
    "(and THREADLINE_BASE_URL when the server is not at http://127.0.0.1:8080/v1)"
)


def call(work: Callable[[Threadline], T]) -> T:
    from threadline_client import Threadline, ThreadlineError

    api_key = _api_key.get() or os.environ.get("THREADLINE_API_KEY")
    if not api_key:
        fail(NO_KEY)
    try:
        with Threadline(api_key=api_key) as client:
            return work(client)
    except ThreadlineError as error:
        fail(str(error))


def plain(value: Any) -> Any:
    """A result as JSON data, as it came on the wire (models, pages, and lists or tuples of them)."""
    from threadline_client import Page
    from threadline_client.types import ThreadlineModel

    if isinstance(value, ThreadlineModel):
        return value.to_dict()
    if isinstance(value, Page):
        page: dict[str, Any] = {"data": [plain(item) for item in value.data]}
        if value.pagination is not None:
            page["pagination"] = value.pagination.to_dict()
        else:
            page["nextCursor"] = value.next_cursor
        return page
    if isinstance(value, list | tuple):
        return type(value)(plain(item) for item in value)
    return value


def fetch(work: Callable[[Threadline], Any]) -> Any:
    """``call``, its result as plain JSON data."""
    return plain(call(work))


def _plainer(annotation: Any, name: str) -> Any:
    """A parameter's help without a type for flags (``--json``, not ``--json <bool>``) and with a name in
    capitals for arguments (``THREAD_ID``, not ``thread_id``)."""
    if typing.get_origin(annotation) is not Annotated:
        return annotation
    for info in annotation.__metadata__:
        if isinstance(info, typer.models.OptionInfo) and info.metavar is None:
            flag = annotation.__origin__ in (bool, bool | None)
            info.metavar = "" if flag else None
        elif isinstance(info, typer.models.ArgumentInfo) and info.metavar is None:
            info.metavar = name.upper()
    return annotation


def with_api_key(command: Callable[..., None]) -> Callable[..., None]:
    """The command as the CLI registers it: with an ``--api-key`` option (default: THREADLINE_API_KEY),
    and its help made plain (see ``_plainer``)."""

    @functools.wraps(command)
    def run(*args: Any, api_key: str | None = None, **kwargs: Any) -> None:
        token = _api_key.set(api_key)
        try:
            command(*args, **kwargs)
        finally:
            _api_key.reset(token)

    option_type = Annotated[
        str | None,
        typer.Option(
            "--api-key", help="A secret key (sk_…); default: THREADLINE_API_KEY.", show_default=False
        ),
    ]
    hints = {**typing.get_type_hints(command, include_extras=True), "api_key": option_type}
    parameters = [
        parameter.replace(annotation=_plainer(hints[parameter.name], parameter.name))
        for parameter in inspect.signature(command).parameters.values()
    ]
    option = inspect.Parameter(
        "api_key", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=option_type
    )
    run.__signature__ = inspect.Signature([*parameters, option])  # type: ignore[attr-defined]
    run.__annotations__ = hints
    return run


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            fail(f"metadata must be KEY=VALUE, got {pair!r}", code=2)
        metadata[key] = value
    return metadata


def read_text(option: str, text: str) -> str:
    """An option's value, or the contents of ``@FILE``; exits 2 when the file cannot be read."""
    if not text.startswith("@"):
        return text
    try:
        return Path(text[1:]).read_text()
    except OSError as exc:
        fail(f"{option}: cannot read {text[1:]}: {exc.strerror}", code=2)


def read_json(option: str, text: str) -> Any:
    """An option's JSON value, or ``@FILE`` holding it; exits 2 saying what is wrong."""
    try:
        return json.loads(read_text(option, text))
    except ValueError as exc:
        fail(f"{option} is not JSON: {exc}", code=2)


def response_format_option(text: str) -> dict[str, Any]:
    """``--response-format``: a JSON object (the API checks its schema)."""
    value = read_json("--response-format", text)
    if not isinstance(value, dict):
        fail('--response-format takes a JSON object: {"type": "json_schema", "name", "schema"}', code=2)
    return value


RESPONSE_FORMAT_HELP = (
    'The answer\'s format, a JSON object as the API takes it (@FILE reads a file): {"type": "json_schema", '
    '"name": "triage", "schema": {…}} makes it one JSON document valid against schema.'
)
