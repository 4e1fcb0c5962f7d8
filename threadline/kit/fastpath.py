"""Operations an app answers before routing (``assembly.assemble``'s ``served_before_routing``) are still
declared to FastAPI, for the contract and for error bodies' operation ids; their declared bodies are never
run."""

from __future__ import annotations

from typing import NoReturn

from fastapi import Request


def never_routed(request: Request) -> NoReturn:  # pragma: no cover - never reached
    """The body of such an operation: reaching it means the app's fast routes are wrong."""
    raise AssertionError(f"{request.method} {request.url.path} is served before routing")
