"""Sending a ``Call``: the synchronous and the asynchronous way, with the same retry rule (``_core``) and the
same stream resumption (``_streams``). A transport is cheap to copy with other options
(``with_options``): the copies share the connection pool."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass
from typing import TypeVar

import httpx

from threadline_client._core import (
    STREAM_READ_TIMEOUT,
    Call,
    Options,
    Surface,
    backoff,
    connection_error,
    result_of,
    retry_after_exception,
    retry_after_status,
)
from threadline_client._errors import ThreadlineError
from threadline_client._streams import DONE, FrameParser, Resumer

T = TypeVar("T")

USER_AGENT = "threadline-python"


@dataclass(frozen=True)
class Endpoints:
    """Where each surface is and which credential it takes."""

    api_url: str
    intake_url: str
    api_key: str | None
    public_key: str | None

    def url(self, surface: Surface, path: str) -> str:
        if surface == "intake":
            return self.intake_url + path
        if surface == "root":
            return self.api_url.removesuffix("/v1") + path
        return self.api_url + path

    def headers(self, surface: Surface) -> dict[str, str]:
        if surface == "root":
            return {}
        if surface == "intake":
            if not self.public_key:
                raise ThreadlineError(
                    "No public key for the intake: pass public_key=... or set THREADLINE_PUBLIC_KEY (pk_...)."
                )
            return {"x-service-key": self.public_key}
        if not self.api_key:
            raise ThreadlineError(
                "No API key: pass api_key=... or set THREADLINE_API_KEY to a secret key (sk_...)."
            )
        return {"Authorization": f"Bearer {self.api_key}"}


def _stream_timeout(options: Options) -> httpx.Timeout:
    return httpx.Timeout(options.timeout, read=max(options.timeout, STREAM_READ_TIMEOUT))


class SyncTransport:
    def __init__(self, http: httpx.Client, endpoints: Endpoints, options: Options) -> None:
        self.http = http
        self.endpoints = endpoints
        self.options = options

    def with_options(self, timeout: float | None, max_retries: int | None) -> SyncTransport:
        return SyncTransport(self.http, self.endpoints, self.options.merged(timeout, max_retries))

    def send(self, call: Call[T]) -> T:
        url, headers = (
            self.endpoints.url(call.surface, call.path),
            call.headers(self.endpoints.headers(call.surface)),
        )
        retries = self.options.max_retries
        for attempt in range(retries + 1):
            try:
                response = self.http.request(
                    call.method, url, params=call.query(), json=call.json, headers=headers,
                    timeout=self.options.timeout,
                )  # fmt: skip
            except httpx.TransportError as exc:
                if attempt == retries or not retry_after_exception(call, exc):
                    raise connection_error(url, exc) from exc
                time.sleep(backoff(attempt, None))
                continue
            if attempt < retries and retry_after_status(call, response):
                time.sleep(backoff(attempt, response.headers.get("retry-after")))
                continue
            return result_of(call, response)
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(self, call: Call[T]) -> Generator[T, None, None]:
        url, headers = self.endpoints.url(call.surface, call.path), self.endpoints.headers(call.surface)
        state = Resumer(call, url, self.options.max_retries)
        while True:
            try:
                with self.http.stream(
                    "GET", url, params=state.query(), headers=headers, timeout=_stream_timeout(self.options)
                ) as reply:
                    if not reply.is_success:
                        reply.read()
                        state.refused(reply)
                    else:
                        parser = FrameParser()
                        for line in reply.iter_lines():
                            frame = parser.feed(line)
                            event = state.take(frame) if frame is not None else None
                            if event == DONE:
                                return
                            if isinstance(event, dict):
                                yield call.parse(event)
                        state.dropped(None)
            except (httpx.TransportError, httpx.StreamError) as exc:
                state.dropped(exc)
            time.sleep(state.wait())


class AsyncTransport:
    def __init__(self, http: httpx.AsyncClient, endpoints: Endpoints, options: Options) -> None:
        self.http = http
        self.endpoints = endpoints
        self.options = options

    def with_options(self, timeout: float | None, max_retries: int | None) -> AsyncTransport:
        return AsyncTransport(self.http, self.endpoints, self.options.merged(timeout, max_retries))

    async def send(self, call: Call[T]) -> T:
        url, headers = (
            self.endpoints.url(call.surface, call.path),
            call.headers(self.endpoints.headers(call.surface)),
        )
        retries = self.options.max_retries
        for attempt in range(retries + 1):
            try:
                response = await self.http.request(
                    call.method, url, params=call.query(), json=call.json, headers=headers,
                    timeout=self.options.timeout,
                )  # fmt: skip
            except httpx.TransportError as exc:
                if attempt == retries or not retry_after_exception(call, exc):
                    raise connection_error(url, exc) from exc
                await asyncio.sleep(backoff(attempt, None))
                continue
            if attempt < retries and retry_after_status(call, response):
                await asyncio.sleep(backoff(attempt, response.headers.get("retry-after")))
                continue
            return result_of(call, response)
        raise AssertionError("unreachable")  # pragma: no cover

    async def stream(self, call: Call[T]) -> AsyncGenerator[T, None]:
        url, headers = self.endpoints.url(call.surface, call.path), self.endpoints.headers(call.surface)
        state = Resumer(call, url, self.options.max_retries)
        while True:
            try:
                async with self.http.stream(
                    "GET", url, params=state.query(), headers=headers, timeout=_stream_timeout(self.options)
                ) as reply:
                    if not reply.is_success:
                        await reply.aread()
                        state.refused(reply)
                    else:
                        parser = FrameParser()
                        async for line in reply.aiter_lines():
                            frame = parser.feed(line)
                            event = state.take(frame) if frame is not None else None
                            if event == DONE:
                                return
                            if isinstance(event, dict):
                                yield call.parse(event)
                        state.dropped(None)
            except (httpx.TransportError, httpx.StreamError) as exc:
                state.dropped(exc)
            await asyncio.sleep(state.wait())
