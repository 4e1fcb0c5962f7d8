"""Naming the operation a request addressed, for error bodies, wherever the error is written, and the
methods a path has, for a 405.

Authentication and body limits answer before the router runs, so the lookup cannot rely on routing
having happened; an index of path patterns and methods is built once, on the first error that needs it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute, compile_path
from starlette.types import Scope

from threadline.kit.errors import UNKNOWN_OPERATION


class OperationIndex:
    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self._routes = routes
        self._entries: list[tuple[re.Pattern[str], frozenset[str], str]] | None = None

    def _build(self) -> list[tuple[re.Pattern[str], frozenset[str], str]]:
        entries = []
        for context in iter_route_contexts(self._routes):
            operation_id = getattr(context, "operation_id", None)
            if operation_id and context.path_format and context.methods:
                pattern, _, _ = compile_path(context.path_format)
                entries.append((pattern, frozenset(context.methods), operation_id))
        return entries

    def _index(self) -> list[tuple[re.Pattern[str], frozenset[str], str]]:
        if self._entries is None:
            self._entries = self._build()
        return self._entries

    def operation_id(self, scope: Scope) -> str:
        """The operation's id, or ``unknown`` for a path or method that matches no operation."""
        path, method = scope["path"], scope["method"]
        for pattern, methods, operation_id in self._index():
            if method in methods and pattern.match(path):
                return operation_id
        return UNKNOWN_OPERATION

    def allowed_methods(self, scope: Scope) -> list[str]:
        """Every method with an operation at the request's path, for a 405's ``Allow``. Starlette's own
        header names only the first route whose path matched (``GET`` on ``/v1/threads``, not ``POST``), as
        each method is a route of its own."""
        path = scope["path"]
        found = {method for pattern, methods, _ in self._index() if pattern.match(path) for method in methods}
        return sorted(found)
