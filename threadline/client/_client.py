"""The synchronous client: retries with jittered backoff (honouring Retry-After, capped) where a retry
cannot duplicate work: any request refused with 429 or never sent (connection refused), and idempotent
requests (GET, DELETE) after a 5xx or a timeout. A POST that may have been processed is never repeated."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from typing import Any

import httpx

from threadline.client import _streams
from threadline.client._errors import APIConnectionError, ThreadlineError, error_for
from threadline.client._resources.automations import Automations
from threadline.client._resources.billing import Billing
from threadline.client._resources.keys import Keys
from threadline.client._resources.logs import Logs
from threadline.client._resources.messages import Messages
from threadline.client._resources.projects import Projects
from threadline.client._resources.runs import Artifacts, Runs
from threadline.client._resources.search import Search
from threadline.client._resources.settings import SettingsResource
from threadline.client._resources.threads import Threads

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
_RETRYABLE = frozenset({500, 502, 503, 504})
_IDEMPOTENT = frozenset({"GET", "HEAD", "DELETE", "PUT", "OPTIONS"})
_MAX_WAIT_SECONDS = 60.0


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
