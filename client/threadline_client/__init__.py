"""Python client for the Threadline API (its own distribution, ``threadline-client``: httpx and pydantic,
nothing of the server).

    from threadline_client import Threadline
    client = Threadline()                          # THREADLINE_API_KEY, THREADLINE_BASE_URL
    thread = client.threads.create(title="Deploys")
    run = client.runs.create(thread.id, input="Why did the deploy fail?")
    for event in client.runs.stream(run.id): ...   # typed events until [DONE]; resumes after a drop
    for thread in client.threads.list(): ...       # every page

``AsyncThreadline`` is the same with ``await`` and ``async for``. See client/README.md.
"""

from threadline_client import types
from threadline_client._client import AsyncThreadline, Threadline
from threadline_client._core import NOT_GIVEN, NotGiven
from threadline_client._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ThreadlineError,
)
from threadline_client._pagination import AsyncPage, AsyncPager, Page, SyncPage

__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncPage",
    "AsyncPager",
    "AsyncThreadline",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "NotGiven",
    "Page",
    "PermissionDeniedError",
    "RateLimitError",
    "SyncPage",
    "Threadline",
    "ThreadlineError",
    "types",
]
