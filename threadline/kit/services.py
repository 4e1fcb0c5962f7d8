"""What request-path code reads from the process's services, without importing the composition root.

``threadline.runtime`` opens the services in an app's lifespan, after the middleware and the endpoints
served before routing were built: those hold a ``Runtime`` and read its services per request. Each
consumer declares, as a protocol of its own, only what it reads (``keys.middleware.AccessServices``); the
composition root has mypy check that its services provide every such protocol."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class ServicesOf(Protocol[S_co]):
    """Where a consumer built before the lifespan finds the services: ``ServicesOf[WhatItReads]``."""

    @property
    def services(self) -> S_co: ...


class Runtime(Generic[S]):
    """A holder the app and its middleware share before the services exist (they open in the lifespan)."""

    def __init__(self) -> None:
        self._services: S | None = None

    @property
    def services(self) -> S:
        if self._services is None:
            raise RuntimeError("services are not open: the application's lifespan has not started")
        return self._services

    @services.setter
    def services(self, value: S | None) -> None:
        self._services = value
