"""``client.runs`` and ``client.artifacts``: /v1/runs, /v1/artifacts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from threadline.client._resource import Page, Resource


class Runs(Resource):
    """Agent runs. A run's events (``stream``) end with ``run_completed {status, usage}``; the stream
    resumes by itself after a dropped connection, without losing or repeating an event."""

    path = "/runs"

    def create(
        self,
        thread_id: str,
        *,
        input: str | None = None,
        model: str | None = None,
        instructions: str | None = None,
        metadata: dict[str, str] | None = None,
        multitask_strategy: str | None = None,
    ) -> dict[str, Any]:
        """Queues a run on the thread (``input``, when given, is appended as a user message first).
        ``multitask_strategy``: ``reject`` (the default: ``ConflictError`` RUN_ACTIVE while the thread has
        an active run), ``enqueue`` or ``interrupt``."""
        fields = {
            "input": input,
            "model": model,
            "instructions": instructions,
            "metadata": metadata,
            "multitaskStrategy": multitask_strategy,
        }
        body = {name: value for name, value in fields.items() if value is not None}
        result: dict[str, Any] = self._client.request("POST", f"/threads/{thread_id}/runs", json=body)
        return result

    def list(self, thread_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The thread's runs, newest first."""
        return self._page({"limit": limit, "cursor": cursor}, f"/threads/{thread_id}/runs")

    def iterate(self, thread_id: str) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(thread_id, limit=100, cursor=cursor))

    def get(self, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{run_id}")
        return result

    def cancel(self, run_id: str) -> dict[str, Any]:
        """Ends a queued or running run at once (``ConflictError`` RUN_ENDED when it has ended)."""
        result: dict[str, Any] = self._client.request("POST", f"{self.path}/{run_id}/cancel")
        return result

    def stream(self, run_id: str, *, cursor: str | None = None) -> Iterator[dict[str, Any]]:
        """The run's events (a finished run's replayed), each with its ``cursor``, until ``[DONE]``;
        with ``cursor``, strictly after that event."""
        return self._client.stream(f"{self.path}/{run_id}/stream", {}, cursor)

    def create_stream_token(
        self, run_id: str, *, ttl_seconds: int | None = None, origins: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """A short-lived token (``st_…``, shown once) for an end user's browser to read this run's stream
        as ``GET /v1/runs/{run_id}/stream?token=…`` without a secret key (``ttl_seconds`` 1 to 3600,
        default 600; ``origins``: pages allowed to use it, default the organization's allowedOrigins)."""
        return self._stream_token(f"{self.path}/{run_id}", ttl_seconds, origins)

    def artifacts(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The run's artifacts, oldest first (``client.artifacts.iterate(run_id)`` for all of them)."""
        return self._client.artifacts.list(run_id, limit=limit, cursor=cursor)


class Artifacts(Resource):
    path = "/artifacts"

    def list(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The run's artifacts, oldest first."""
        return self._page({"limit": limit, "cursor": cursor}, f"/runs/{run_id}/artifacts")

    def iterate(self, run_id: str) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(run_id, limit=100, cursor=cursor))

    def get(self, artifact_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{artifact_id}")
        return result
