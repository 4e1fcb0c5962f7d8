"""Reading Server-Sent Event streams, resuming by cursor after a dropped connection.

Every frame the server sends carries its cursor (``id:``); after a connection drops, the reader reconnects
with the cursor of the last frame it received whole, so the caller sees each event once, in order, and
never notices the reconnection. A frame counts only once its closing blank line arrived (as the SSE
standard says): its ``id:`` is not taken before, so a connection cut inside a frame resends that frame
instead of skipping it. ``data: [DONE]`` ends the stream. The reader gives up after ``max_failures``
consecutive failed attempts (a connection error, a 429 or 5xx answer, or a stream closed without
``[DONE]``); any other error answer is raised at once. The decisions live in ``Resumer``, shared by the
synchronous and the asynchronous loops, which only move bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from threadline_client._core import MAX_RETRY_AFTER, Call, backoff, status_error
from threadline_client._errors import APIConnectionError

DONE = "[DONE]"
_TRANSIENT = frozenset({429, 500, 502, 503, 504})
MIN_FAILURES = 5  # a stream is long-lived: it tolerates more consecutive failures than a request


@dataclass(frozen=True)
class Frame:
    id: str | None
    data: str | None


class FrameParser:
    """Lines in, whole frames out (``Frame(None, None)`` for a comment: a heartbeat). One per connection:
    a frame the connection ends inside is never completed, so never seen."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._data: list[str] = []

    def feed(self, line: str) -> Frame | None:
        if not line:
            frame = None
            if self._id is not None or self._data:
                frame = Frame(self._id, "\n".join(self._data) if self._data else None)
            self._id, self._data = None, []
            return frame
        if line.startswith(":"):
            return Frame(None, None)
        if line.startswith("id:"):
            self._id = line[3:].removeprefix(" ")
        elif line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
        return None


class Resumer:
    """Where the stream is (``cursor``) and whether to go on after a failure."""

    def __init__(self, call: Call[Any], url: str, max_retries: int) -> None:
        self.call = call
        self.url = url
        self.cursor: str | None = call.params.get("cursor")
        self.max_failures = max(max_retries, MIN_FAILURES)
        self.failures = 0
        self._wait: float | None = None

    def query(self) -> dict[str, Any]:
        return self.call.with_params(cursor=self.cursor).query()

    def take(self, frame: Frame) -> dict[str, Any] | str | None:
        """The frame's event, ``DONE``, or None (a heartbeat, or a frame that only moves the position)."""
        self.failures = 0  # anything from the server, a heartbeat too, means the stream is alive
        if frame.id:
            self.cursor = frame.id
        if frame.data is None:
            return None
        if frame.data == DONE:
            return DONE
        event: dict[str, Any] = json.loads(frame.data)
        self.cursor = event.get("cursor") or self.cursor
        return event

    def refused(self, reply: httpx.Response) -> None:
        """An error answer (its body read): raised at once unless transient and retries remain."""
        error = status_error(reply)
        if reply.status_code not in _TRANSIENT:
            raise error
        self._failed(error)
        retry_after = reply.headers.get("retry-after")
        self._wait = backoff(self.failures - 1, retry_after) if retry_after else None

    def dropped(self, exc: Exception | None) -> None:
        """The connection broke (``exc``) or the server closed the stream without ``[DONE]`` (None)."""
        reason = f"{exc!r}" if exc is not None else "the stream ended without [DONE]"
        self._failed(APIConnectionError(f"The stream at {self.url} keeps failing: {reason}"), exc)

    def _failed(self, error: Exception, cause: Exception | None = None) -> None:
        self.failures += 1
        self._wait = None
        if self.failures > self.max_failures:
            raise error from cause

    def wait(self) -> float:
        if self._wait is not None:
            return min(self._wait, MAX_RETRY_AFTER)
        return backoff(self.failures - 1, None) if self.failures else 0.0
