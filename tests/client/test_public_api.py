"""threadline_client's public names, pinned: a change to the client's surface is a decision, not an accident.
And the distribution stands alone: importing it loads nothing of the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import threadline_client
import threadline_client.types

PUBLIC = [
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

ERRORS_BY_STATUS = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "ConflictError": 409,
    "RateLimitError": 429,
    "InternalServerError": 500,
}


def test_all_is_pinned() -> None:
    assert threadline_client.__all__ == PUBLIC


def test_every_public_name_is_importable() -> None:
    namespace: dict[str, object] = {}
    exec("from threadline_client import *", namespace)  # noqa: S102 - a fixed statement: the star import itself
    assert sorted(name for name in namespace if name != "__builtins__") == sorted(PUBLIC)
    assert all(hasattr(threadline_client.types, name) for name in threadline_client.types.__all__)


def test_one_error_class_per_status() -> None:
    from threadline_client._errors import error_for

    for name, status in ERRORS_BY_STATUS.items():
        error = error_for(status, {"code": "X", "message": "m", "operationId": "o", "missingContext": ["a"]})
        assert type(error).__name__ == name
        assert (error.code, error.operation_id, error.missing_context) == ("X", "o", ["a"])
    assert issubclass(threadline_client.APITimeoutError, threadline_client.APIConnectionError)


def test_the_client_imports_without_the_server() -> None:
    """With only client/ on the path (not the repository root), nothing of ``threadline`` is loaded."""
    client_dir = Path(threadline_client.__file__).parent.parent
    check = (
        "import sys, threadline_client; "
        "threadline_client.Threadline('sk_x'); threadline_client.AsyncThreadline('sk_x'); "
        "assert not [m for m in sys.modules if m == 'threadline' or m.startswith('threadline.')]"
    )
    subprocess.run(
        [sys.executable, "-c", check],
        check=True,
        cwd=client_dir,
        env={"PYTHONPATH": str(client_dir), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
