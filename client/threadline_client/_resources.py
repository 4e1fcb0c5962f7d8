"""The API's groups, one class each, shared by ``Threadline`` and ``AsyncThreadline`` (see ``_endpoints``):
identity and keys, projects, threads and their messages, runs and their artifacts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from threadline_client._core import NOT_GIVEN, Call, NotGiven, drop_none, given
from threadline_client._endpoints import Resource, Tr, listing, operation, streaming
from threadline_client._events import RunEvent, run_event
from threadline_client._models import (
    Artifact,
    Key,
    KeyCreated,
    Me,
    Message,
    Project,
    Run,
    RunStreamToken,
    Thread,
    ThreadStreamToken,
)
from threadline_client._tools import ToolFunctions, decisions_body, outputs_body, tool_streaming

Strategy = Literal["reject", "enqueue", "interrupt"]


def _token_body(ttl_seconds: int | None, origins: Sequence[str] | None) -> dict[str, object]:
    return drop_none(ttlSeconds=ttl_seconds, origins=list(origins) if origins is not None else None)


class MeResource(Resource[Tr]):
    @operation("me.get")
    def get(self) -> Call[Me]:
        """Which organization and key the client's credential stands for."""
        return Call("GET", "/me", Me.model_validate)


class Keys(Resource[Tr]):
    @operation("keys.create")
    def create(
        self,
        *,
        name: str,
        type: Literal["secret", "public"],
        project_id: str | None = None,
        rate_limit_per_minute: int | None = None,
    ) -> Call[KeyCreated]:
        """A new key; its value (``.key``) is shown this once. A public key needs ``project_id``."""
        body = drop_none(name=name, type=type, projectId=project_id, rateLimitPerMinute=rate_limit_per_minute)
        return Call("POST", "/keys", KeyCreated.model_validate, json=body)

    @listing("keys.list")
    def list(
        self, *, limit: int | None = None, cursor: str | None = None, type: str | None = None
    ) -> Call[Key]:
        return Call("GET", "/keys", Key.model_validate, {"limit": limit, "cursor": cursor, "type": type})

    @operation("keys.get")
    def get(self, key_id: str) -> Call[Key]:
        return Call("GET", f"/keys/{key_id}", Key.model_validate)

    @operation("keys.revoke")
    def revoke(self, key_id: str) -> Call[Key]:
        """Every server process refuses the key within a second."""
        return Call("DELETE", f"/keys/{key_id}", Key.model_validate)


class Projects(Resource[Tr]):
    @operation("projects.create")
    def create(self, *, name: str) -> Call[Project]:
        return Call("POST", "/projects", Project.model_validate, json={"name": name})

    @listing("projects.list")
    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Call[Project]:
        return Call("GET", "/projects", Project.model_validate, {"limit": limit, "cursor": cursor})

    @operation("projects.get")
    def get(self, project_id: str) -> Call[Project]:
        return Call("GET", f"/projects/{project_id}", Project.model_validate)


class Threads(Resource[Tr]):
    @operation("threads.create")
    def create(self, *, title: str | None = None, metadata: Mapping[str, str] | None = None) -> Call[Thread]:
        body = drop_none(title=title, metadata=dict(metadata or {}))
        return Call("POST", "/threads", Thread.model_validate, json=body)

    @listing("threads.list")
    def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Call[Thread]:
        """Newest first; ``metadata`` keeps the threads with all of these key/value pairs."""
        filters = {f"metadata[{key}]": value for key, value in (metadata or {}).items()}
        return Call("GET", "/threads", Thread.model_validate, {"limit": limit, "cursor": cursor, **filters})

    @operation("threads.get")
    def get(self, thread_id: str) -> Call[Thread]:
        return Call("GET", f"/threads/{thread_id}", Thread.model_validate)

    @operation("threads.update")
    def update(
        self,
        thread_id: str,
        *,
        title: str | NotGiven | None = NOT_GIVEN,
        metadata: Mapping[str, str] | NotGiven = NOT_GIVEN,
    ) -> Call[Thread]:
        """The fields given are replaced (``title=None`` clears the title)."""
        body = given(title=title, metadata=metadata if isinstance(metadata, NotGiven) else dict(metadata))
        return Call("PATCH", f"/threads/{thread_id}", Thread.model_validate, json=body)

    @operation("threads.delete")
    def delete(self, thread_id: str) -> Call[Thread]:
        return Call("DELETE", f"/threads/{thread_id}", Thread.model_validate)

    @streaming("threads.stream")
    def stream(self, thread_id: str, *, cursor: str | None = None) -> Call[RunEvent]:
        """The events of the thread's active run (else a replay of its latest run) until that run's
        ``[DONE]``; nothing when the thread has no run. A ``cursor`` resumes the run it came from."""
        return Call("GET", f"/threads/{thread_id}/stream", run_event, {"cursor": cursor})

    @operation("threads.createStreamToken")
    def create_stream_token(
        self, thread_id: str, *, ttl_seconds: int | None = None, origins: Sequence[str] | None = None
    ) -> Call[ThreadStreamToken]:
        """A short-lived token (``st_…``, shown once) for an end user's browser to read this thread's
        stream as ``GET /v1/threads/{thread_id}/stream?token=…`` without a secret key."""
        body = _token_body(ttl_seconds, origins)
        return Call(
            "POST", f"/threads/{thread_id}/stream-tokens", ThreadStreamToken.model_validate, json=body
        )


class Messages(Resource[Tr]):
    @operation("messages.create")
    def create(
        self,
        thread_id: str,
        *,
        content: str,
        role: Literal["user", "assistant", "system", "tool"] = "user",
        metadata: Mapping[str, str] | None = None,
    ) -> Call[Message]:
        body = {"content": content, "role": role, "metadata": dict(metadata or {})}
        return Call("POST", f"/threads/{thread_id}/messages", Message.model_validate, json=body)

    @listing("messages.list")
    def list(self, thread_id: str, *, limit: int | None = None, cursor: str | None = None) -> Call[Message]:
        """Oldest first."""
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", f"/threads/{thread_id}/messages", Message.model_validate, params)

    @operation("messages.get")
    def get(self, thread_id: str, message_id: str) -> Call[Message]:
        return Call("GET", f"/threads/{thread_id}/messages/{message_id}", Message.model_validate)


class Runs(Resource[Tr]):
    """Agent runs. A run's events (``stream``) end with ``run_completed``; the stream resumes by itself
    after a dropped connection, without losing or repeating an event."""

    @operation("runs.create")
    def create(
        self,
        thread_id: str,
        *,
        input: str | None = None,
        model: str | None = None,
        instructions: str | None = None,
        metadata: Mapping[str, str] | None = None,
        multitask_strategy: Strategy | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        action_timeout_seconds: int | None = None,
        agent_id: str | None = None,
        agent_version: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Call[Run]:
        """Queues a run on the thread (``input``, when given, is appended as a user message first).
        ``multitask_strategy``: ``reject`` (the default: ``ConflictError`` RUN_ACTIVE while the thread has
        an active run), ``enqueue`` or ``interrupt``. ``tools``: the tools offered, as on the wire
        (``{"type": "function", "name", "description", "parameters"}``, ``{"type": "builtin", "name",
        "requireApproval"}``, ``{"type": "mcp", "serverId", "allowedTools", "requireApproval"}``); without
        it the three built-in tools. ``action_timeout_seconds`` bounds a wait for the caller (default 600).
        ``response_format``: ``{"type": "json_schema", "name", "schema", "strict"}`` makes the answer one
        JSON document valid against ``schema`` (else the run fails ``OUTPUT_INVALID``). ``agent_id``: run
        this agent (at ``agent_version``, default its latest); the fields given here override its fields."""
        body = drop_none(
            input=input,
            model=model,
            instructions=instructions,
            metadata=dict(metadata) if metadata is not None else None,
            multitaskStrategy=multitask_strategy,
            tools=[dict(tool) for tool in tools] if tools is not None else None,
            actionTimeoutSeconds=action_timeout_seconds,
            agentId=agent_id,
            agentVersion=agent_version,
            responseFormat=dict(response_format) if response_format is not None else None,
        )
        return Call("POST", f"/threads/{thread_id}/runs", Run.model_validate, json=body)

    @listing("runs.list")
    def list(self, thread_id: str, *, limit: int | None = None, cursor: str | None = None) -> Call[Run]:
        """The thread's runs, newest first."""
        return Call(
            "GET", f"/threads/{thread_id}/runs", Run.model_validate, {"limit": limit, "cursor": cursor}
        )

    @operation("runs.get")
    def get(self, run_id: str) -> Call[Run]:
        return Call("GET", f"/runs/{run_id}", Run.model_validate)

    @operation("runs.cancel")
    def cancel(self, run_id: str) -> Call[Run]:
        """Ends a queued or running run at once (``ConflictError`` RUN_ENDED when it has ended)."""
        return Call("POST", f"/runs/{run_id}/cancel", Run.model_validate)

    @tool_streaming("runs.stream")
    def stream(
        self, run_id: str, *, cursor: str | None = None, tools: ToolFunctions | None = None
    ) -> Call[RunEvent]:
        """The run's events (a finished run's replayed) until ``[DONE]``; with ``cursor``, strictly after
        that event. With ``tools`` (``{name: function}``), each wait for function outputs is answered on
        the way: the functions are called with the call's arguments as keyword arguments (awaited when
        they return an awaitable, on the async client), and their return values (a string or any JSON
        value) sent as the outputs, before the ``run_requires_action`` event is yielded. Approvals and
        calls with no function are yielded unanswered."""
        return Call("GET", f"/runs/{run_id}/stream", run_event, {"cursor": cursor})

    @operation("runs.submitToolOutputs")
    def submit_tool_outputs(self, run_id: str, tool_outputs: Mapping[str, Any]) -> Call[Run]:
        """Answers a ``submit_tool_outputs`` wait: ``{toolCallId: output}`` for every pending call, each
        output a string or any JSON value (it becomes the call's ``result``). ``BadRequestError``
        TOOL_OUTPUTS_INCOMPLETE (missing ids in ``missing_context``) or UNKNOWN_TOOL_CALL; ``ConflictError``
        RUN_NOT_WAITING."""
        return Call(
            "POST", f"/runs/{run_id}/tool-outputs", Run.model_validate, json=outputs_body(tool_outputs)
        )

    @operation("runs.approve")
    def approve(
        self,
        run_id: str,
        *,
        approved: Sequence[str] = (),
        rejected: Mapping[str, str | None] | None = None,
    ) -> Call[Run]:
        """Decides an ``approve_tool_calls`` wait: the ids ``approved`` execute; ``rejected``
        (``{toolCallId: reason}``) complete as errors with the reason, and the model goes on. Every
        pending call in one request; the same errors as ``submit_tool_outputs``."""
        body = decisions_body(list(approved), dict(rejected or {}))
        return Call("POST", f"/runs/{run_id}/approvals", Run.model_validate, json=body)

    @operation("runs.createStreamToken")
    def create_stream_token(
        self, run_id: str, *, ttl_seconds: int | None = None, origins: Sequence[str] | None = None
    ) -> Call[RunStreamToken]:
        """A short-lived token (``st_…``, shown once) for an end user's browser to read this run's stream
        as ``GET /v1/runs/{run_id}/stream?token=…`` (``ttl_seconds`` 1 to 3600, default 600; ``origins``:
        pages allowed to use it, default the organization's allowedOrigins)."""
        body = _token_body(ttl_seconds, origins)
        return Call("POST", f"/runs/{run_id}/stream-tokens", RunStreamToken.model_validate, json=body)


class Artifacts(Resource[Tr]):
    @listing("artifacts.list")
    def list(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Call[Artifact]:
        """The run's artifacts, oldest first."""
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", f"/runs/{run_id}/artifacts", Artifact.model_validate, params)

    @operation("artifacts.get")
    def get(self, artifact_id: str) -> Call[Artifact]:
        return Call("GET", f"/artifacts/{artifact_id}", Artifact.model_validate)
