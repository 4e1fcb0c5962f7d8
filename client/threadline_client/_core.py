"""What the synchronous and the asynchronous client share: a request described once (``Call``), the
settings it runs with (``Options``), and the retry rule, so both clients behave the same by construction.

Retries: a request is retried when doing it again cannot duplicate work. Any request refused with 429 (the
rate limiter answers before anything is done) or never sent (connection refused) is retried; a request
that may have been processed (a 5xx, a timeout or a connection broken after sending) is retried only when
repeating it changes nothing: GET and DELETE. The wait grows exponentially with jitter, or is the
``Retry-After`` the server sent (capped).
"""

from __future__ import annotations

import email.utils
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

import httpx

from threadline_client._errors import APIConnectionError, APIStatusError, APITimeoutError, error_for

T = TypeVar("T")

# Where a request goes: the API (``…/v1``, secret key), the intake (``…/v1`` on the intake port, public
# key) or the server's root (``/healthz``, no key).
Surface = Literal["api", "intake", "root"]

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_INTAKE_URL = "http://127.0.0.1:8081/v1"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
STREAM_READ_TIMEOUT = 60.0  # the server sends a heartbeat every 15 s
MAX_RETRY_AFTER = 60.0
_RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
_REPEATABLE = frozenset({"GET", "HEAD", "DELETE"})


@dataclass(frozen=True)
class Options:
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES

    def merged(self, timeout: float | None, max_retries: int | None) -> Options:
        return Options(
            timeout=self.timeout if timeout is None else timeout,
            max_retries=self.max_retries if max_retries is None else max_retries,
        )


@dataclass(frozen=True)
class Call(Generic[T]):
    """One operation of the contract, ready to send; ``parse`` turns the answer's JSON into ``T``."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    surface: Surface = "api"
    operation_id: str = ""  # set by the method's decorator (``_endpoints``)

    @property
    def keyed(self) -> bool:
        """A POST of the API: sent with an ``Idempotency-Key`` (one per call, the same on every retry), so
        the server answers a retry with the first attempt's response instead of doing the work twice."""
        return self.method == "POST" and self.surface == "api"

    @property
    def repeatable(self) -> bool:
        return self.method in _REPEATABLE or self.keyed

    def headers(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, "Idempotency-Key": f"tl-{uuid.uuid4()}"} if self.keyed else base

    def query(self) -> dict[str, Any]:
        return {name: value for name, value in self.params.items() if value is not None}

    def with_params(self, **params: Any) -> Call[T]:
        return replace(self, params={**self.params, **params})


class NotGiven:
    """The default of an optional field where None means something (``title=None`` clears a title)."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


def given(**fields: Any) -> dict[str, Any]:
    """A request body of the fields given (``NOT_GIVEN`` left out; None sent as null)."""
    return {name: value for name, value in fields.items() if not isinstance(value, NotGiven)}


def drop_none(**fields: Any) -> dict[str, Any]:
    """A request body of the fields given (None meaning "not given")."""
    return {name: value for name, value in fields.items() if value is not None}


def backoff(attempt: int, retry_after: str | None) -> float:
    """Seconds to wait before attempt ``attempt + 1``: the server's Retry-After (seconds or an HTTP date),
    else 0.5 s doubling up to 8 s, with jitter so that clients refused together do not return together."""
    if retry_after:
        seconds: float | None = None
        if retry_after.strip().isdigit():
            seconds = float(retry_after)
        else:
            try:
                seconds = email.utils.parsedate_to_datetime(retry_after).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = None  # neither seconds nor an HTTP date: the usual backoff
        if seconds is not None:
            return max(0.0, min(seconds, MAX_RETRY_AFTER))
    return float(min(8.0, 0.5 * 2**attempt)) * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not secrecy


def retry_after_status(call: Call[Any], response: httpx.Response) -> bool:
    """429; 5xx where repeating is safe; and a keyed POST's retry that met its first attempt still in
    flight (409 ``IDEMPOTENCY_KEY_IN_USE``: the next retry gets its answer)."""
    status = response.status_code
    if status == 409 and call.keyed:
        try:
            return bool(response.json().get("reason") == "IDEMPOTENCY_KEY_IN_USE")
        except ValueError:
            return False
    return status == 429 or (call.repeatable and status in _RETRYABLE_STATUS)


def retry_after_exception(call: Call[Any], exc: httpx.TransportError) -> bool:
    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
    return never_sent or call.repeatable


def connection_error(url: str, exc: httpx.TransportError) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"No answer from {url} in time: {exc!r}")
    return APIConnectionError(f"Could not reach {url}: {exc!r}")


def status_error(response: httpx.Response) -> APIStatusError:
    """The answer's error envelope as an exception (the body must have been read)."""
    try:
        body = response.json()
    except ValueError:
        body = {"message": response.text[:200]}
    return error_for(
        response.status_code, body if isinstance(body, dict) else {}, response.headers.get("x-request-id")
    )


def result_of(call: Call[T], response: httpx.Response) -> T:
    if not response.is_success:
        raise status_error(response)
    return call.parse(response.json() if response.content else None)
