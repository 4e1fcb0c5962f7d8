"""Reading Server-Sent Event streams, resuming by cursor after a dropped connection.

Every frame the server sends carries its cursor (``id:``); after a connection drops, the reader
reconnects with the last cursor it handed out, so the caller sees each event once, in order, and never
notices the reconnection. It gives up after ``max_retries`` consecutive failed attempts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from threadline.client._errors import APIConnectionError, error_for

_BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)


def events(
    http: httpx.Client, path: str, params: dict[str, Any], cursor: str | None, max_retries: int
) -> Iterator[dict[str, Any]]:
    """Each event's JSON (``cursor`` included) until ``[DONE]``."""
    failures = 0
    while True:
        query = {k: v for k, v in params.items() if v is not None}
        if cursor is not None:
            query["cursor"] = cursor
        try:
            with http.stream(
                "GET", path.lstrip("/"), params=query, timeout=httpx.Timeout(30, read=60)
            ) as reply:
                if not reply.is_success:
                    reply.read()
                    try:
                        body = reply.json()
                    except ValueError:
                        body = {"message": reply.text[:200]}
                    raise error_for(reply.status_code, body if isinstance(body, dict) else {})
                for field, value in _fields(reply.iter_lines()):
                    failures = 0  # anything from the server, a heartbeat too, means the stream is alive
                    if field == "id":
                        cursor = value or cursor
                    elif field == "data" and value == "[DONE]":
                        return
                    elif field == "data":
                        event: dict[str, Any] = json.loads(value)
                        cursor = event.get("cursor", cursor)
                        yield event
        except (httpx.TransportError, httpx.StreamError) as exc:
            failures += 1
            if failures > max_retries:
                raise APIConnectionError(f"The stream at {path} keeps failing: {exc}") from exc
            time.sleep(_BACKOFF_SECONDS[min(failures, len(_BACKOFF_SECONDS)) - 1])
            continue
        # The server closed the stream without [DONE] (it restarted): resume from the last cursor.
        failures += 1
        if failures > max_retries:
            raise APIConnectionError(f"The stream at {path} ended without [DONE] {failures} times.")
        time.sleep(_BACKOFF_SECONDS[min(failures, len(_BACKOFF_SECONDS)) - 1])


def _fields(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``("id", cursor)`` for a frame's id, ``("data", text)`` for its data (multi-line data joined), and
    ``("", "")`` for a comment (a heartbeat); other fields are skipped."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "data", "\n".join(data)
                data = []
        elif line.startswith(":"):
            yield "", ""
        elif line.startswith("id:"):
            yield "id", line[3:].removeprefix(" ")
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "data", "\n".join(data)
