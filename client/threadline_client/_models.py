"""Typed results: a model per schema of the contract (``openapi.json``'s components), fields in snake_case
with the wire's camelCase as aliases. Fields the server adds later are kept (``extra="allow"``), so an
older client reads a newer server; ``to_dict()`` gives the object back exactly as it came on the wire.
Timestamps stay ISO 8601 strings, as the contract gives them (no format is promised beyond that)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

Level = Literal["trace", "debug", "info", "warn", "error", "fatal"]
Role = Literal["user", "assistant", "system", "tool"]


class ThreadlineModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def to_dict(self) -> dict[str, Any]:
        """The object as JSON on the wire (camelCase names, unknown fields included)."""
        return self.model_dump(mode="json", by_alias=True)


class RateLimit(ThreadlineModel):
    requests_per_minute: int


class Organization(ThreadlineModel):
    id: str
    name: str
    rate_limit: RateLimit
    created_at: str


class Key(ThreadlineModel):
    id: str
    name: str
    type: Literal["public", "secret"]
    prefix: str
    last4: str
    project_id: str | None
    rate_limit_per_minute: int | None
    created_at: str
    last_used_at: str | None
    revoked_at: str | None


class KeyCreated(Key):
    """A new key with its value (``key``): the only time the value is shown."""

    key: str


class Me(ThreadlineModel):
    organization: Organization
    key: Key


class Project(ThreadlineModel):
    id: str
    name: str
    created_at: str


class Thread(ThreadlineModel):
    id: str
    title: str | None
    metadata: dict[str, Any]
    active_run_id: str | None
    message_count: int
    created_at: str
    updated_at: str


class ThreadHit(Thread):
    """A search result: ``snippet`` holds the matched text, matches between ``<mark>`` and ``</mark>``."""

    snippet: str


class Message(ThreadlineModel):
    id: str
    thread_id: str
    run_id: str | None
    role: Role
    content: str
    metadata: dict[str, Any]
    created_at: str


class MessageHit(Message):
    snippet: str


class SearchPagination(ThreadlineModel):
    page: int
    limit: int
    total_pages: int
    total_results: int


class LedgerPagination(ThreadlineModel):
    page: int
    limit: int
    total_pages: int
    total: int


class RunUsage(ThreadlineModel):
    input_tokens: int
    output_tokens: int


class RunError(ThreadlineModel):
    code: str
    message: str


class RequiredToolCall(ThreadlineModel):
    """A call the run waits on: ``arguments`` is the parsed object when the model's arguments parse, else
    the raw text."""

    id: str
    name: str
    arguments: Any


class RequiredAction(ThreadlineModel):
    """What a ``requires_action`` run waits for: the outputs of function calls (``submit_tool_outputs``:
    ``runs.submit_tool_outputs``) or a decision on calls that need approval (``approve_tool_calls``:
    ``runs.approve``), before ``expires_at``."""

    type: Literal["submit_tool_outputs", "approve_tool_calls"]
    tool_calls: list[RequiredToolCall]
    expires_at: str


class Run(ThreadlineModel):
    id: str
    thread_id: str
    status: Literal["queued", "running", "requires_action", "completed", "failed", "cancelled"]
    model: str
    instructions: str | None
    automation_id: str | None
    metadata: dict[str, Any]
    error: RunError | None
    usage: RunUsage
    created_at: str
    started_at: str | None
    ended_at: str | None
    tools: list[dict[str, Any]] | None  # the tool entries as given; None: the built-ins
    action_timeout_seconds: int
    required_action: RequiredAction | None  # set while the run waits (``requires_action``)
    agent_id: str | None  # the agent the run was made from; None without one
    agent_version: int | None
    # ``{"type": "json_schema", "name", "schema", "strict"}`` or ``{"type": "text"}``; None: text. With a
    # json_schema, the completed run's answer (its last message) is one JSON document valid against it.
    response_format: dict[str, Any] | None


class RunStreamToken(ThreadlineModel):
    token: str
    expires_at: str
    run_id: str


class ThreadStreamToken(ThreadlineModel):
    token: str
    expires_at: str
    thread_id: str


class Artifact(ThreadlineModel):
    id: str
    run_id: str
    thread_id: str
    name: str
    mime_type: str
    size: int
    content: str
    created_at: str


class Settings(ThreadlineModel):
    default_model: str
    instructions: str | None
    log_retention_days: int
    allowed_origins: list[str]
    billing_enforced: bool
    rate_limit: RateLimit
    run_concurrency: int


class ScheduleTrigger(ThreadlineModel):
    type: str
    cron: str
    timezone: str


class LogTrigger(ThreadlineModel):
    type: str
    project_id: str | None
    level: Level
    contains: str | None
    cooldown_seconds: int


class AutomationAction(ThreadlineModel):
    prompt: str
    thread_id: str | None
    model: str | None
    agent_id: str | None  # runs use this agent (at agent_version; None: its latest)
    agent_version: int | None
    response_format: dict[str, Any] | None  # the runs' responseFormat; None: text


class AutomationError(ThreadlineModel):
    code: str
    message: str


class Automation(ThreadlineModel):
    id: str
    name: str
    enabled: bool
    trigger: ScheduleTrigger | LogTrigger
    action: AutomationAction
    last_triggered_at: str | None
    next_run_at: str | None
    last_error: AutomationError | None
    created_at: str
    updated_at: str


class Balance(ThreadlineModel):
    balance: int
    updated_at: str | None


class Transaction(ThreadlineModel):
    id: str
    type: Literal["credit", "debit"]
    amount: int
    balance_after: int
    description: str
    run_id: str | None
    created_at: str


class LogRecord(ThreadlineModel):
    id: str
    project_id: str
    kind: Literal["log", "event"]
    message: str
    level: Level
    timestamp: str
    attributes: dict[str, Any]
    trace_id: str | None
    span_id: str | None
    received_at: str
    name: str | None
    properties: dict[str, Any] | None
    distinct_id: str | None


class Accepted(ThreadlineModel):
    accepted: int


class Health(ThreadlineModel):
    status: Literal["ok", "ready"]


class McpServer(ThreadlineModel):
    """A registered MCP server. Header values are write-only: ``header_names`` lists what is sent."""

    id: str
    name: str
    url: str
    transport: Literal["streamable_http", "sse"]
    header_names: list[str]
    timeout_seconds: float
    created_at: str
    updated_at: str


class McpTool(ThreadlineModel):
    name: str
    description: str | None
    input_schema: dict[str, Any]


class McpToolList(ThreadlineModel):
    data: list[McpTool]
