"""``Threadline`` and ``AsyncThreadline``: the same resources (``client.threads``, ``client.runs``…), the
same settings and the same behaviour; only the way of waiting differs. Settings come from the arguments,
else from ``THREADLINE_API_KEY``, ``THREADLINE_BASE_URL``, ``THREADLINE_PUBLIC_KEY`` and
``THREADLINE_INTAKE_URL``. ``with_options(timeout=…, max_retries=…)`` is a copy for some calls, sharing
the connections."""

from __future__ import annotations

import os
from typing import Generic

import httpx

from threadline_client._agents import Agents
from threadline_client._core import (
    DEFAULT_BASE_URL,
    DEFAULT_INTAKE_URL,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    Options,
)
from threadline_client._endpoints import Tr
from threadline_client._errors import ThreadlineError
from threadline_client._resources import Artifacts, Keys, MeResource, Messages, Projects, Runs, Threads
from threadline_client._resources_more import (
    Automations,
    Billing,
    HealthResource,
    Intake,
    Logs,
    McpServers,
    Search,
    SettingsResource,
)
from threadline_client._transport import USER_AGENT, AsyncTransport, Endpoints, SyncTransport
from threadline_client._webhooks import Webhooks


def _endpoints(
    api_key: str | None, base_url: str | None, public_key: str | None, intake_url: str | None
) -> Endpoints:
    api_key = api_key or os.environ.get("THREADLINE_API_KEY")
    public_key = public_key or os.environ.get("THREADLINE_PUBLIC_KEY")
    if not api_key and not public_key:
        raise ThreadlineError(
            "No API key: pass api_key=... or set THREADLINE_API_KEY to a secret key (sk_...)."
        )
    return Endpoints(
        api_url=(base_url or os.environ.get("THREADLINE_BASE_URL") or DEFAULT_BASE_URL).rstrip("/"),
        intake_url=(intake_url or os.environ.get("THREADLINE_INTAKE_URL") or DEFAULT_INTAKE_URL).rstrip("/"),
        api_key=api_key,
        public_key=public_key,
    )


class _Resources(Generic[Tr]):
    def __init__(self, transport: Tr) -> None:
        self._transport: Tr = transport
        self.me: MeResource[Tr] = MeResource(transport)
        self.keys: Keys[Tr] = Keys(transport)
        self.projects: Projects[Tr] = Projects(transport)
        self.threads: Threads[Tr] = Threads(transport)
        self.messages: Messages[Tr] = Messages(transport)
        self.runs: Runs[Tr] = Runs(transport)
        self.artifacts: Artifacts[Tr] = Artifacts(transport)
        self.logs: Logs[Tr] = Logs(transport)
        self.search: Search[Tr] = Search(transport)
        self.automations: Automations[Tr] = Automations(transport)
        self.agents: Agents[Tr] = Agents(transport)
        self.mcp_servers: McpServers[Tr] = McpServers(transport)
        self.webhooks: Webhooks[Tr] = Webhooks(transport)
        self.billing: Billing[Tr] = Billing(transport)
        self.settings: SettingsResource[Tr] = SettingsResource(transport)
        self.intake: Intake[Tr] = Intake(transport)
        self.health: HealthResource[Tr] = HealthResource(transport)

    @property
    def base_url(self) -> str:
        return self._transport.endpoints.api_url

    @property
    def timeout(self) -> float:
        return self._transport.options.timeout

    @property
    def max_retries(self) -> int:
        return self._transport.options.max_retries


class Threadline(_Resources[SyncTransport]):
    """The synchronous client. Use it as a context manager, or ``close()`` it, to release connections."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        public_key: str | None = None,
        intake_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
    ) -> None:
        endpoints = _endpoints(api_key, base_url, public_key, intake_url)
        self._owns_http = http_client is None
        http = http_client or httpx.Client(headers={"User-Agent": USER_AGENT})
        super().__init__(SyncTransport(http, endpoints, Options(timeout, max_retries)))

    def with_options(self, *, timeout: float | None = None, max_retries: int | None = None) -> Threadline:
        copy = object.__new__(Threadline)
        copy._owns_http = False
        _Resources.__init__(copy, self._transport.with_options(timeout, max_retries))
        return copy

    def close(self) -> None:
        if self._owns_http:
            self._transport.http.close()

    def __enter__(self) -> Threadline:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncThreadline(_Resources[AsyncTransport]):
    """The asynchronous client: every method is awaited (``await client.threads.get(id)``), lists and
    streams are iterated with ``async for``."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        public_key: str | None = None,
        intake_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        endpoints = _endpoints(api_key, base_url, public_key, intake_url)
        self._owns_http = http_client is None
        http = http_client or httpx.AsyncClient(headers={"User-Agent": USER_AGENT})
        super().__init__(AsyncTransport(http, endpoints, Options(timeout, max_retries)))

    def with_options(
        self, *, timeout: float | None = None, max_retries: int | None = None
    ) -> AsyncThreadline:
        copy = object.__new__(AsyncThreadline)
        copy._owns_http = False
        _Resources.__init__(copy, self._transport.with_options(timeout, max_retries))
        return copy

    async def close(self) -> None:
        if self._owns_http:
            await self._transport.http.aclose()

    async def __aenter__(self) -> AsyncThreadline:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
