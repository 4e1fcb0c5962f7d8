"""Reading Server-Sent Event streams, resuming by cursor after a dropped connection.

Every frame the server sends carries its cursor (``id:``); after a connection drops, the reader
reconnects with the cursor of the last frame it received whole, so the caller sees each event once, in
order, and never notices the reconnection. A frame counts only once its closing blank line arrived (as
the SSE standard says): its ``id:`` is not taken before, so a connection cut inside a frame resends that
frame instead of skipping it. ``data: [DONE]`` ends the stream. The reader gives up after ``max_retries``
consecutive failed attempts (a connection error, a 429 or 5xx answer, or a stream closed without
``[DONE]``); any other error answer is raised at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from threadline.client._errors import APIConnectionError, APIStatusError, error_for

DONE = "[DONE]"
_BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)
_MAX_RETRY_AFTER_SECONDS = 60.0
_TRANSIENT = frozenset({429, 500, 502, 503, 504})


def events(
    http: httpx.Client, path: str, params: dict[str, Any], cursor: str | None, max_retries: int
) -> Iterator[dict[str, Any]]:
    """Each event's JSON (``cursor`` included) until ``[DONE]``."""
    failures = 0
    while True:
        query = {k: v for k, v in params.items() if v is not None}
        if cursor is not None:
            query["cursor"] = cursor
        wait: float | None = None
        try:
            with http.stream(
                "GET", path.lstrip("/"), params=query, timeout=httpx.Timeout(30, read=60)
            ) as reply:
                if not reply.is_success:
                    error = _error_of(reply)
                    if reply.status_code not in _TRANSIENT:
                        raise error
                    failures += 1
                    if failures > max_retries:
                        raise error
                    wait = _retry_after(reply.headers.get("retry-after"))
                else:
                    for frame_id, data in _frames(reply.iter_lines()):
                        failures = 0  # anything from the server, a heartbeat too, means the stream is alive
                        if frame_id:
                            cursor = frame_id
                        if data is None:
                            continue  # a heartbeat, or a frame that only moves the position
                        if data == DONE:
                            return
                        event: dict[str, Any] = json.loads(data)
                        cursor = event.get("cursor") or cursor
                        yield event
                    # The server closed the stream without [DONE] (it restarted): resume from the cursor.
                    failures += 1
                    if failures > max_retries:
                        raise APIConnectionError(
                            f"The stream at {path} ended without [DONE] {failures} times."
                        )
        except (httpx.TransportError, httpx.StreamError) as exc:
            failures += 1
            if failures > max_retries:
                raise APIConnectionError(f"The stream at {path} keeps failing: {exc}") from exc
        time.sleep(wait if wait is not None else _BACKOFF_SECONDS[min(failures, len(_BACKOFF_SECONDS)) - 1])


def _error_of(reply: httpx.Response) -> APIStatusError:
    reply.read()
    try:
        body = reply.json()
    except ValueError:
        body = {"message": reply.text[:200]}
    return error_for(reply.status_code, body if isinstance(body, dict) else {})


def _retry_after(value: str | None) -> float | None:
    if value is not None and value.isdigit():
        return min(float(value), _MAX_RETRY_AFTER_SECONDS)
    return None


def _frames(lines: Iterator[str]) -> Iterator[tuple[str | None, str | None]]:
    """``(id, data)`` of each whole frame (either may be None; multi-line data joined), and
    ``(None, None)`` for a comment (a heartbeat). A frame the stream ends inside is dropped."""
    frame_id: str | None = None
    data: list[str] = []
    for line in lines:
        if not line:
            if frame_id is not None or data:
                yield frame_id, ("\n".join(data) if data else None)
            frame_id, data = None, []
        elif line.startswith(":"):
            yield None, None
        elif line.startswith("id:"):
            frame_id = line[3:].removeprefix(" ")
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
