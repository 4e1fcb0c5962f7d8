"""The synchronous client: retries with jittered backoff (honouring Retry-After, capped) where a retry
cannot duplicate work: any request refused with 429 or never sent (connection refused), and idempotent
requests (GET, DELETE) after a 5xx or a timeout. A POST that may have been processed is never repeated."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from threadline.client import _streams
from threadline.client._errors import APIConnectionError, ThreadlineError, error_for

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
_RETRYABLE = frozenset({500, 502, 503, 504})
_IDEMPOTENT = frozenset({"GET", "HEAD", "DELETE", "PUT", "OPTIONS"})
_MAX_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Page:
    data: list[dict[str, Any]]
    next_cursor: str | None


class Threadline:
    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        api_key = api_key or os.environ.get("THREADLINE_API_KEY")
        if not api_key:
            raise ThreadlineError(
                "No API key: pass api_key or set THREADLINE_API_KEY to a secret key (sk_…)."
            )
        self.base_url = (base_url or os.environ.get("THREADLINE_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.max_retries = max_retries
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "threadline-python"},
            timeout=timeout,
            transport=transport,
        )
        self.keys = Keys(self)
        self.projects = Projects(self)
        self.threads = Threads(self)
        self.messages = Messages(self)
        self.search = Search(self)
        self.settings = SettingsResource(self)
        self.logs = Logs(self)
        self.runs = Runs(self)
        self.artifacts = Artifacts(self)
        self.automations = Automations(self)
        self.billing = Billing(self)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        idempotent = method.upper() in _IDEMPOTENT
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self._http.request(method, path.lstrip("/"), **kwargs)
            except httpx.TransportError as exc:
                never_sent = isinstance(exc, httpx.ConnectError)
                if last or not (never_sent or idempotent):
                    raise APIConnectionError(f"Could not reach {self.base_url}: {exc}") from exc
                time.sleep(_backoff(attempt, None))
                continue
            status = response.status_code
            if not last and (status == 429 or (idempotent and status in _RETRYABLE)):
                time.sleep(_backoff(attempt, response.headers.get("retry-after")))
                continue
            if response.is_success:
                return response.json()
            try:
                body = response.json()
            except ValueError:
                body = {"message": response.text[:200]}
            raise error_for(response.status_code, body if isinstance(body, dict) else {})
        raise AssertionError("unreachable")  # pragma: no cover

    def me(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/me")
        return result

    def stream(
        self, path: str, params: dict[str, Any], cursor: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The events of a stream endpoint, resuming by cursor after a dropped connection."""
        return _streams.events(self._http, path, params, cursor, max(self.max_retries, 5))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Threadline:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _backoff(attempt: int, retry_after: str | None) -> float:
    if retry_after is not None and retry_after.isdigit():
        return min(float(retry_after), _MAX_WAIT_SECONDS)
    return float(min(8.0, 0.5 * 2**attempt)) * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not secrecy


class _Resource:
    path: str

    def __init__(self, client: Threadline) -> None:
        self._client = client

    def _page(self, params: dict[str, Any], path: str | None = None) -> Page:
        body = self._client.request(
            "GET", path or self.path, params={k: v for k, v in params.items() if v is not None}
        )
        return Page(data=body["data"], next_cursor=body["nextCursor"])

    def _iterate(self, fetch: Callable[[str | None], Page]) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page.data
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


class Keys(_Resource):
    path = "/keys"

    def create(
        self, *, name: str, type: str, project_id: str | None = None, rate_limit_per_minute: int | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "type": type}
        if project_id is not None:
            body["projectId"] = project_id
        if rate_limit_per_minute is not None:
            body["rateLimitPerMinute"] = rate_limit_per_minute
        result: dict[str, Any] = self._client.request("POST", self.path, json=body)
        return result

    def list(self, *, limit: int | None = None, cursor: str | None = None, type: str | None = None) -> Page:
        return self._page({"limit": limit, "cursor": cursor, "type": type})

    def iterate(self, *, type: str | None = None) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor, type=type))

    def get(self, key_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{key_id}")
        return result

    def revoke(self, key_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("DELETE", f"{self.path}/{key_id}")
        return result


class Projects(_Resource):
    path = "/projects"

    def create(self, *, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("POST", self.path, json={"name": name})
        return result

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Page:
        return self._page({"limit": limit, "cursor": cursor})

    def iterate(self) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor))

    def get(self, project_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{project_id}")
        return result


class Threads(_Resource):
    path = "/threads"

    def create(self, *, title: str | None = None, metadata: dict[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"metadata": metadata or {}}
        if title is not None:
            body["title"] = title
        result: dict[str, Any] = self._client.request("POST", self.path, json=body)
        return result

    def list(
        self, *, limit: int | None = None, cursor: str | None = None, metadata: dict[str, str] | None = None
    ) -> Page:
        filters = {f"metadata[{key}]": value for key, value in (metadata or {}).items()}
        return self._page({"limit": limit, "cursor": cursor, **filters})

    def iterate(self, *, metadata: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor, metadata=metadata))

    def get(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{thread_id}")
        return result

    def update(self, thread_id: str, **changes: Any) -> dict[str, Any]:
        """``title=...`` and/or ``metadata=...``; ``title=None`` clears the title."""
        result: dict[str, Any] = self._client.request("PATCH", f"{self.path}/{thread_id}", json=changes)
        return result

    def delete(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("DELETE", f"{self.path}/{thread_id}")
        return result

    def stream(self, thread_id: str, cursor: str | None = None) -> Iterator[dict[str, Any]]:
        """The events of the thread's active run (else a replay of its latest run) until that run's
        ``[DONE]``; nothing when the thread has no run. A ``cursor`` resumes the run it came from."""
        return self._client.stream(f"{self.path}/{thread_id}/stream", {}, cursor)


class Messages(_Resource):
    def create(
        self, thread_id: str, *, content: str, role: str = "user", metadata: dict[str, str] | None = None
    ) -> dict[str, Any]:
        body = {"content": content, "role": role, "metadata": metadata or {}}
        result: dict[str, Any] = self._client.request("POST", f"/threads/{thread_id}/messages", json=body)
        return result

    def list(self, thread_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        body = self._client.request(
            "GET",
            f"/threads/{thread_id}/messages",
            params={k: v for k, v in {"limit": limit, "cursor": cursor}.items() if v is not None},
        )
        return Page(data=body["data"], next_cursor=body["nextCursor"])

    def iterate(self, thread_id: str) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(thread_id, limit=100, cursor=cursor))

    def get(self, thread_id: str, message_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"/threads/{thread_id}/messages/{message_id}")
        return result


class Search(_Resource):
    """Page-based: each call returns ``{"data": [...], "pagination": {...}}``."""

    def threads(self, q: str, *, page: int = 1, limit: int | None = None) -> dict[str, Any]:
        params = {k: v for k, v in {"q": q, "page": page, "limit": limit}.items() if v is not None}
        result: dict[str, Any] = self._client.request("GET", "/search/threads", params=params)
        return result

    def messages(
        self,
        q: str,
        *,
        page: int = 1,
        limit: int | None = None,
        thread_id: str | None = None,
        role: str | None = None,
    ) -> dict[str, Any]:
        params = {"q": q, "page": page, "limit": limit, "threadId": thread_id, "role": role}
        result: dict[str, Any] = self._client.request(
            "GET", "/search/messages", params={k: v for k, v in params.items() if v is not None}
        )
        return result


class SettingsResource(_Resource):
    def get(self) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", "/settings")
        return result

    def update(self, **changes: Any) -> dict[str, Any]:
        """camelCase field names, as on the wire: ``defaultModel=...``, ``logRetentionDays=...``."""
        result: dict[str, Any] = self._client.request("PATCH", "/settings", json=changes)
        return result


class Logs(_Resource):
    """Filters: ``project_id``, ``level`` (that level and above), ``kind`` (log, event), ``since``,
    ``until`` (ISO 8601), ``q`` (text)."""

    path = "/logs"

    @staticmethod
    def _filters(**filters: Any) -> dict[str, Any]:
        names = {"project_id": "projectId"}
        return {names.get(name, name): value for name, value in filters.items() if value is not None}

    def list(self, *, limit: int | None = None, cursor: str | None = None, **filters: Any) -> Page:
        return self._page({"limit": limit, "cursor": cursor, **self._filters(**filters)})

    def iterate(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """Newest first, every page; a filtered page may be short (see ``GET /v1/logs``)."""
        return self._iterate(lambda cursor: self.list(cursor=cursor, **filters))

    def tail(self, *, cursor: str | None = None, **filters: Any) -> Iterator[dict[str, Any]]:
        """Records as they arrive (each with its ``cursor``), forever or until ``until`` has passed."""
        return self._client.stream("/logs/stream", self._filters(**filters), cursor)


class Runs(_Resource):
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

    def artifacts(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The run's artifacts, oldest first (``client.artifacts.iterate(run_id)`` for all of them)."""
        return self._client.artifacts.list(run_id, limit=limit, cursor=cursor)


class Artifacts(_Resource):
    path = "/artifacts"

    def list(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The run's artifacts, oldest first."""
        return self._page({"limit": limit, "cursor": cursor}, f"/runs/{run_id}/artifacts")

    def iterate(self, run_id: str) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(run_id, limit=100, cursor=cursor))

    def get(self, artifact_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{artifact_id}")
        return result


class Automations(_Resource):
    """Rules that start runs: on a schedule (``{"type": "schedule", "cron", "timezone"}``) or when an
    ingested log record matches (``{"type": "log", "projectId", "level", "contains", "cooldownSeconds"}``).
    ``trigger`` and ``action`` (``{"prompt", "threadId", "model"}``) are sent as given: camelCase field
    names, as on the wire."""

    path = "/automations"

    def create(
        self,
        *,
        name: str,
        trigger: dict[str, Any],
        action: dict[str, Any],
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "trigger": trigger, "action": action}
        if enabled is not None:
            body["enabled"] = enabled
        result: dict[str, Any] = self._client.request("POST", self.path, json=body)
        return result

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Page:
        """The organization's automations, newest first."""
        return self._page({"limit": limit, "cursor": cursor})

    def iterate(self) -> Iterator[dict[str, Any]]:
        return self._iterate(lambda cursor: self.list(limit=100, cursor=cursor))

    def get(self, automation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/{automation_id}")
        return result

    def update(self, automation_id: str, **changes: Any) -> dict[str, Any]:
        """``name=...``, ``enabled=...``, ``trigger=...``, ``action=...``: the fields given are replaced,
        ``trigger`` and ``action`` as whole objects (a field left out of them takes its default)."""
        result: dict[str, Any] = self._client.request("PATCH", f"{self.path}/{automation_id}", json=changes)
        return result

    def delete(self, automation_id: str) -> dict[str, Any]:
        """The deleted automation; the runs it started stay."""
        result: dict[str, Any] = self._client.request("DELETE", f"{self.path}/{automation_id}")
        return result

    def trigger(self, automation_id: str) -> dict[str, Any]:
        """Fires it now (enabled or not, cooldown or not) and returns the run it started."""
        result: dict[str, Any] = self._client.request("POST", f"{self.path}/{automation_id}/trigger")
        return result


class Billing(_Resource):
    """The organization's credits (read-only: an operator grants them with ``threadline billing grant``).
    The ledger is page-based: ``transactions`` returns ``{"data": [...], "pagination": {...}}``."""

    path = "/billing"

    def balance(self) -> dict[str, Any]:
        """``{"balance": credits, "updatedAt": when the last entry was written, or None}``."""
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/balance")
        return result

    def transactions(self, *, page: int = 1, limit: int | None = None) -> dict[str, Any]:
        """One page of the ledger, newest first (``pagination``: page, limit, totalPages, total)."""
        params = {k: v for k, v in {"page": page, "limit": limit}.items() if v is not None}
        result: dict[str, Any] = self._client.request("GET", f"{self.path}/transactions", params=params)
        return result

    def iterate_transactions(self) -> Iterator[dict[str, Any]]:
        """Every entry, newest first, page after page until ``totalPages``. Entries written meanwhile push
        older ones to later pages; each entry is still given once (by id)."""
        seen: set[str] = set()
        page = 1
        while True:
            body = self.transactions(page=page, limit=100)
            for entry in body["data"]:
                if entry["id"] not in seen:
                    seen.add(entry["id"])
                    yield entry
            if not body["data"] or page >= body["pagination"]["totalPages"]:
                return
            page += 1
