"""Each operation is written once, as a function that describes its request (a ``Call``); the decorators
below turn it into a method of the synchronous client (``client.threads.get(id)`` returns a ``Thread``)
and of the asynchronous one (``await client.threads.get(id)``), with the same parameters, so the two
clients cannot drift apart. ``operation`` is a plain request, ``listing`` a list (a page object, walked by
iterating it), ``streaming`` a Server-Sent Event stream (an iterator of events)."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from dataclasses import replace
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from threadline_client._core import Call
from threadline_client._pagination import AsyncPager, Page, SyncPage, fetch_sync, page_parser
from threadline_client._transport import AsyncTransport, SyncTransport

P = ParamSpec("P")
T = TypeVar("T")
Tr = TypeVar("Tr", SyncTransport, AsyncTransport)


class Resource(Generic[Tr]):
    """A group of the API (``client.threads``): one class for both clients, typed by its transport, so its
    methods return results (``Threadline``) or awaitables (``AsyncThreadline``)."""

    def __init__(self, transport: Tr) -> None:
        self._transport: Tr = transport


def _named(build: Callable[..., Any], method: Callable[..., Any]) -> Callable[..., Any]:
    return functools.wraps(build, assigned=("__name__", "__qualname__", "__doc__"))(method)


class Endpoint:
    """What the three kinds share: the contract's operationId, and the request's description."""

    def __init__(self, operation_id: str, build: Callable[..., Call[Any]]) -> None:
        self.operation_id = operation_id
        self._describe = build

    def _build(self, obj: Any, *args: Any, **kwargs: Any) -> Call[Any]:
        return replace(self._describe(obj, *args, **kwargs), operation_id=self.operation_id)


class Operation(Endpoint, Generic[P, T]):
    @overload
    def __get__(self, obj: None, owner: type) -> Operation[P, T]: ...
    @overload
    def __get__(self, obj: Resource[SyncTransport], owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Resource[AsyncTransport], owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type) -> Any:
        if obj is None:
            return self
        build, transport = self._build, obj._transport
        if isinstance(transport, AsyncTransport):

            async def call_async(*args: Any, **kwargs: Any) -> Any:
                return await transport.send(build(obj, *args, **kwargs))

            return _named(self._describe, call_async)
        return _named(self._describe, lambda *args, **kwargs: transport.send(build(obj, *args, **kwargs)))


class Listing(Endpoint, Generic[P, T]):
    """``build`` returns the first page's call with the item parser as its ``parse``."""

    def __init__(self, operation_id: str, build: Callable[..., Call[Any]], numbered: bool) -> None:
        super().__init__(operation_id, build)
        self._numbered = numbered

    @overload
    def __get__(self, obj: None, owner: type) -> Listing[P, T]: ...
    @overload
    def __get__(self, obj: Resource[SyncTransport], owner: type) -> Callable[P, SyncPage[T]]: ...
    @overload
    def __get__(self, obj: Resource[AsyncTransport], owner: type) -> Callable[P, AsyncPager[T]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type) -> Any:
        if obj is None:
            return self
        build, transport, numbered = self._build, obj._transport, self._numbered

        def prepared(*args: Any, **kwargs: Any) -> tuple[Call[Any], Callable[[Call[Any], Any], Page[T]]]:
            call = build(obj, *args, **kwargs)
            raw: Call[Any] = replace(call, parse=lambda body: body)
            return raw, page_parser(call.parse, numbered)

        if isinstance(transport, AsyncTransport):
            return _named(
                self._describe, lambda *args, **kwargs: AsyncPager(transport, *prepared(*args, **kwargs))
            )
        return _named(
            self._describe, lambda *args, **kwargs: fetch_sync(transport, *prepared(*args, **kwargs))
        )


class Streaming(Endpoint, Generic[P, T]):
    @overload
    def __get__(self, obj: None, owner: type) -> Streaming[P, T]: ...
    @overload
    def __get__(self, obj: Resource[SyncTransport], owner: type) -> Callable[P, Generator[T, None, None]]: ...
    @overload
    def __get__(self, obj: Resource[AsyncTransport], owner: type) -> Callable[P, AsyncGenerator[T, None]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type) -> Any:
        if obj is None:
            return self
        build, transport = self._build, obj._transport
        return _named(self._describe, lambda *args, **kwargs: transport.stream(build(obj, *args, **kwargs)))


Build = Callable[Concatenate[Any, P], Call[T]]


def operation(operation_id: str) -> Callable[[Build[P, T]], Operation[P, T]]:
    return lambda build: Operation(operation_id, build)


def listing(operation_id: str, *, numbered: bool = False) -> Callable[[Build[P, T]], Listing[P, T]]:
    """A list: cursor pages, or numbered pages (``page=``, ``.pagination``)."""
    return lambda build: Listing(operation_id, build, numbered)


def streaming(operation_id: str) -> Callable[[Build[P, T]], Streaming[P, T]]:
    return lambda build: Streaming(operation_id, build)
