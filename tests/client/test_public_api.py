"""threadline.client's public names, pinned: a change to the SDK's surface is a decision, not an accident."""

from __future__ import annotations

import threadline.client

PUBLIC = [
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


def test_all_is_pinned() -> None:
    assert threadline.client.__all__ == PUBLIC


def test_every_public_name_is_importable() -> None:
    namespace: dict[str, type] = {}
    exec("from threadline.client import *", namespace)  # noqa: S102 - a fixed statement: the star import itself
    assert sorted(name for name in namespace if name != "__builtins__") == PUBLIC
    for name in PUBLIC:
        assert namespace[name].__name__ == name
