"""What every client command shares: the SDK client from the environment, its errors as exit status 1."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from threadline.cli.output import fail
from threadline.client import Threadline, ThreadlineError

T = TypeVar("T")


def call(work: Callable[[Threadline], T]) -> T:
    try:
        with Threadline() as client:
            return work(client)
    except ThreadlineError as error:
        fail(str(error))


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            fail(f"metadata must be KEY=VALUE, got {pair!r}", code=2)
        metadata[key] = value
    return metadata
