"""Requests by operation and status, and their durations: the middleware ``assembly.assemble`` puts
outermost in every app when metrics are on (``kit.metrics`` defines what it counts into)."""

from __future__ import annotations

from time import perf_counter

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadline.kit.metrics import REQUEST_SECONDS, REQUESTS
from threadline.kit.routing import OperationIndex

_MAX_FIXED = 64


class RequestMetrics:
    """Counts and times every request of an app (``assembly.assemble`` puts it outermost, so it sees the
    status that was actually sent, the 500 envelope included).

    The operation is read from the route FastAPI matched (``scope["route"]``); requests answered before
    routing (refusals, the endpoints served before routing) are named by the ``OperationIndex``, memoised
    for the fixed paths served before routing, which are the hottest. A labelled child is cached per
    (operation, status): both sets are closed, and the lookup inside prometheus-client takes a lock."""

    def __init__(self, app: ASGIApp, *, operations: OperationIndex, fixed_paths: frozenset[str]) -> None:
        self.app = app
        self.operations = operations
        self.fixed_paths = fixed_paths
        self._fixed: dict[tuple[str, str], str] = {}
        self._children: dict[tuple[str, int], tuple[Counter, Histogram]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = perf_counter()

        async def measured(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._observe(scope, message["status"], perf_counter() - arrived)
            await send(message)

        await self.app(scope, receive, measured)

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        operation = self._operation(scope)
        children = self._children.get((operation, status))
        if children is None:
            children = REQUESTS.labels(operation, str(status)), REQUEST_SECONDS.labels(operation)
            self._children[(operation, status)] = children
        children[0].inc()
        children[1].observe(seconds)

    def _operation(self, scope: Scope) -> str:
        route = scope.get("route")
        operation_id = getattr(route, "operation_id", None)
        if isinstance(operation_id, str):
            return operation_id
        path = scope["path"]
        if path not in self.fixed_paths:
            return self.operations.operation_id(scope)
        key = (scope["method"], path)
        named = self._fixed.get(key)
        if named is None:
            named = self.operations.operation_id(scope)
            if len(self._fixed) < _MAX_FIXED:  # methods are the client's to invent
                self._fixed[key] = named
        return named
