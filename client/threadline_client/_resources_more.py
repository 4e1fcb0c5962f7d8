"""The API's groups, continued: logs, search, automations, billing, settings, the intake and health."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from threadline_client._core import NOT_GIVEN, Call, NotGiven, given
from threadline_client._endpoints import Resource, Tr, listing, operation, streaming
from threadline_client._events import LogEvent, log_event
from threadline_client._models import (
    Accepted,
    Automation,
    Balance,
    Health,
    LogRecord,
    McpServer,
    McpToolList,
    MessageHit,
    Run,
    Settings,
    ThreadHit,
    Transaction,
)


def _log_filters(**filters: Any) -> dict[str, Any]:
    names = {"project_id": "projectId"}
    return {names.get(name, name): value for name, value in filters.items()}


class Logs(Resource[Tr]):
    """Filters: ``project_id``, ``level`` (that level and above), ``kind`` (log, event), ``since``,
    ``until`` (ISO 8601), ``q`` (text)."""

    @listing("logs.list")
    def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        project_id: str | None = None,
        level: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        q: str | None = None,
    ) -> Call[LogRecord]:
        """Newest first; a filtered page may be short (see ``GET /v1/logs``)."""
        params = _log_filters(
            limit=limit,
            cursor=cursor,
            project_id=project_id,
            level=level,
            kind=kind,
            since=since,
            until=until,
            q=q,
        )
        return Call("GET", "/logs", LogRecord.model_validate, params)

    @streaming("logs.stream")
    def stream(
        self,
        *,
        cursor: str | None = None,
        project_id: str | None = None,
        level: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        q: str | None = None,
    ) -> Call[LogEvent]:
        """Records as they arrive (each with its ``cursor``), forever or until ``until`` has passed."""
        params = _log_filters(
            cursor=cursor, project_id=project_id, level=level, kind=kind, since=since, until=until, q=q
        )
        return Call("GET", "/logs/stream", log_event, params)


class Search(Resource[Tr]):
    """Full-text search, numbered pages; each hit's ``snippet`` marks the matches with ``<mark>``."""

    @listing("search.threads", numbered=True)
    def threads(self, q: str, *, page: int = 1, limit: int | None = None) -> Call[ThreadHit]:
        """Threads whose title or metadata match."""
        return Call(
            "GET", "/search/threads", ThreadHit.model_validate, {"q": q, "page": page, "limit": limit}
        )

    @listing("search.messages", numbered=True)
    def messages(
        self,
        q: str,
        *,
        page: int = 1,
        limit: int | None = None,
        thread_id: str | None = None,
        role: str | None = None,
    ) -> Call[MessageHit]:
        params = {"q": q, "page": page, "limit": limit, "threadId": thread_id, "role": role}
        return Call("GET", "/search/messages", MessageHit.model_validate, params)


class Automations(Resource[Tr]):
    """Rules that start runs: on a schedule (``{"type": "schedule", "cron", "timezone"}``) or when an
    ingested log record matches (``{"type": "log", "projectId", "level", "contains", "cooldownSeconds"}``).
    ``trigger`` and ``action`` (``{"prompt", "threadId", "model", "responseFormat"}``) are sent as given,
    camelCase as on the wire."""

    @operation("automations.create")
    def create(
        self,
        *,
        name: str,
        trigger: Mapping[str, Any],
        action: Mapping[str, Any],
        enabled: bool | NotGiven = NOT_GIVEN,
    ) -> Call[Automation]:
        body = given(name=name, trigger=dict(trigger), action=dict(action), enabled=enabled)
        return Call("POST", "/automations", Automation.model_validate, json=body)

    @listing("automations.list")
    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Call[Automation]:
        """Newest first."""
        return Call("GET", "/automations", Automation.model_validate, {"limit": limit, "cursor": cursor})

    @operation("automations.get")
    def get(self, automation_id: str) -> Call[Automation]:
        return Call("GET", f"/automations/{automation_id}", Automation.model_validate)

    @operation("automations.update")
    def update(
        self,
        automation_id: str,
        *,
        name: str | NotGiven | None = NOT_GIVEN,
        enabled: bool | NotGiven | None = NOT_GIVEN,
        trigger: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        action: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
    ) -> Call[Automation]:
        """The fields given are replaced, ``trigger`` and ``action`` as whole objects."""
        body = given(name=name, enabled=enabled, trigger=trigger, action=action)
        return Call("PATCH", f"/automations/{automation_id}", Automation.model_validate, json=body)

    @operation("automations.delete")
    def delete(self, automation_id: str) -> Call[Automation]:
        """The deleted automation; the runs it started stay."""
        return Call("DELETE", f"/automations/{automation_id}", Automation.model_validate)

    @operation("automations.trigger")
    def trigger(self, automation_id: str) -> Call[Run]:
        """Fires it now (enabled or not, cooldown or not): the run it started."""
        return Call("POST", f"/automations/{automation_id}/trigger", Run.model_validate)


def _server_body(
    name: str | NotGiven,
    url: str | NotGiven,
    transport: str | NotGiven,
    headers: Mapping[str, str] | NotGiven,
    timeout_seconds: float | NotGiven,
) -> dict[str, Any]:
    """A server's fields as the API names them, those not given left out (create and update)."""
    return given(
        name=name,
        url=url,
        transport=transport,
        headers=dict(headers) if isinstance(headers, Mapping) else headers,
        timeoutSeconds=timeout_seconds,
    )


class McpServers(Resource[Tr]):
    """MCP servers whose tools runs may use. ``headers`` (e.g. ``{"Authorization": "Bearer ..."}``) are
    sent to the server on every request and never returned; a URL that is not public is refused
    (``EGRESS_NOT_ALLOWED``) unless the operator allows it."""

    @operation("mcpServers.create")
    def create(
        self,
        *,
        name: str,
        url: str,
        transport: str | NotGiven = NOT_GIVEN,
        headers: Mapping[str, str] | NotGiven = NOT_GIVEN,
        timeout_seconds: float | NotGiven = NOT_GIVEN,
    ) -> Call[McpServer]:
        """``transport``: ``streamable_http`` (default) or ``sse``."""
        body = _server_body(name, url, transport, headers, timeout_seconds)
        return Call("POST", "/mcp-servers", McpServer.model_validate, json=body)

    @listing("mcpServers.list")
    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Call[McpServer]:
        """Newest first."""
        return Call("GET", "/mcp-servers", McpServer.model_validate, {"limit": limit, "cursor": cursor})

    @operation("mcpServers.get")
    def get(self, server_id: str) -> Call[McpServer]:
        return Call("GET", f"/mcp-servers/{server_id}", McpServer.model_validate)

    @operation("mcpServers.update")
    def update(
        self,
        server_id: str,
        *,
        name: str | NotGiven = NOT_GIVEN,
        url: str | NotGiven = NOT_GIVEN,
        transport: str | NotGiven = NOT_GIVEN,
        headers: Mapping[str, str] | NotGiven = NOT_GIVEN,
        timeout_seconds: float | NotGiven = NOT_GIVEN,
    ) -> Call[McpServer]:
        """The fields given are replaced; ``headers`` replaces every header (``{}`` removes them)."""
        body = _server_body(name, url, transport, headers, timeout_seconds)
        return Call("PATCH", f"/mcp-servers/{server_id}", McpServer.model_validate, json=body)

    @operation("mcpServers.delete")
    def delete(self, server_id: str) -> Call[McpServer]:
        return Call("DELETE", f"/mcp-servers/{server_id}", McpServer.model_validate)

    @operation("mcpServers.listTools")
    def tools(self, server_id: str) -> Call[McpToolList]:
        """The server's tools now, asked of the server (``APIStatusError`` 502 ``MCP_UNREACHABLE`` when it
        cannot be reached)."""
        return Call("GET", f"/mcp-servers/{server_id}/tools", McpToolList.model_validate)


class Billing(Resource[Tr]):
    """The organization's credits (read-only: an operator grants them with ``threadline billing grant``)."""

    @operation("billing.balance")
    def balance(self) -> Call[Balance]:
        return Call("GET", "/billing/balance", Balance.model_validate)

    @listing("billing.transactions", numbered=True)
    def transactions(self, *, page: int = 1, limit: int | None = None) -> Call[Transaction]:
        """The ledger, newest first."""
        return Call(
            "GET", "/billing/transactions", Transaction.model_validate, {"page": page, "limit": limit}
        )


class SettingsResource(Resource[Tr]):
    @operation("settings.get")
    def get(self) -> Call[Settings]:
        return Call("GET", "/settings", Settings.model_validate)

    @operation("settings.update")
    def update(
        self,
        *,
        default_model: str | NotGiven = NOT_GIVEN,
        instructions: str | NotGiven | None = NOT_GIVEN,
        log_retention_days: int | NotGiven = NOT_GIVEN,
        allowed_origins: Sequence[str] | NotGiven = NOT_GIVEN,
        billing_enforced: bool | NotGiven = NOT_GIVEN,
    ) -> Call[Settings]:
        """The fields given are replaced (the rate limit and run concurrency are an operator's)."""
        body = given(
            defaultModel=default_model,
            instructions=instructions,
            logRetentionDays=log_retention_days,
            allowedOrigins=allowed_origins
            if isinstance(allowed_origins, NotGiven)
            else list(allowed_origins),
            billingEnforced=billing_enforced,
        )
        return Call("PATCH", "/settings", Settings.model_validate, json=body)


class Intake(Resource[Tr]):
    """Telemetry in, on the intake's address (``intake_url``) with a project's public key (``public_key``).
    Not retried after a failure that may have stored the batch (it would be stored twice)."""

    @operation("logs.ingest")
    def send_logs(self, records: Sequence[Mapping[str, Any]]) -> Call[Accepted]:
        """Log records (``message``, ``level``, ``timestamp``, ``attributes``, ``traceId``, ``spanId``);
        all or nothing."""
        body = [dict(record) for record in records]
        return Call("POST", "/logs", Accepted.model_validate, json=body, surface="intake")

    @operation("events.ingest")
    def send_events(self, events: Sequence[Mapping[str, Any]]) -> Call[Accepted]:
        """Product events (``name``, ``properties``, ``timestamp``, ``distinctId``); all or nothing."""
        body = [dict(event) for event in events]
        return Call("POST", "/events", Accepted.model_validate, json=body, surface="intake")


class HealthResource(Resource[Tr]):
    @operation("health.live")
    def live(self) -> Call[Health]:
        return Call("GET", "/healthz", Health.model_validate, surface="root")

    @operation("health.ready")
    def ready(self) -> Call[Health]:
        """``ServiceUnavailable`` (an ``InternalServerError``) while the database is unreachable."""
        return Call("GET", "/readyz", Health.model_validate, surface="root")
