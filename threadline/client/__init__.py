"""Python client for the Threadline API. Imports nothing from the server package.

from threadline.client import Threadline
client = Threadline()                      # THREADLINE_API_KEY, THREADLINE_BASE_URL
me = client.me()
key = client.keys.create(name="ci", type="secret")
for k in client.keys.iterate(): ...
run = client.runs.create(thread_id, input="Why did the deploy fail?")
for event in client.runs.stream(run["id"]): ...   # until run_completed; resumes after a dropped connection
"""

from threadline.client._client import Threadline
from threadline.client._errors import (
    APIConnectionError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ThreadlineError,
)
from threadline.client._resource import Page

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "Page",
    "PermissionDeniedError",
    "RateLimitError",
    "Threadline",
    "ThreadlineError",
]
