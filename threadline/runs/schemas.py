from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from threadline.agent.response_format import ResponseFormat
from threadline.agent.tool_entries import MAX_TOOLS, ToolEntries
from threadline.keys.stream_tokens import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS
from threadline.kit.metadata import Metadata
from threadline.kit.schemas import RequestModel, ResponseModel, Timestamp
from threadline.messages.schemas import MAX_CONTENT_BYTES, Content
from threadline.runs.artifacts import Artifact
from threadline.runs.repository import DEFAULT_ACTION_TIMEOUT_SECONDS, MAX_ACTION_TIMEOUT_SECONDS, Run, Status
from threadline.settings.schemas import MAX_INSTRUCTIONS_CHARS, ModelName, Origins


class RunCreate(RequestModel):
    model: ModelName | None = Field(
        None, description="`provider/model`; default: the organization's `defaultModel` setting."
    )
    instructions: Annotated[str, StringConstraints(max_length=MAX_INSTRUCTIONS_CHARS)] | None = Field(
        None, description="The system prompt; default: the organization's `instructions` setting."
    )
    input: Content | None = Field(
        None,
        description=f"Appended to the thread as a user message, in the same transaction as the run "
        f"(up to {MAX_CONTENT_BYTES // 1024} KiB).",
    )
    metadata: Metadata = Field(default_factory=dict)
    multitask_strategy: Literal["reject", "enqueue", "interrupt"] = Field(
        "reject",
        description="While the thread has an active run: `reject` (409 RUN_ACTIVE), `enqueue` (start when "
        "the active runs end) or `interrupt` (cancel them first).",
    )
    tools: ToolEntries | None = Field(
        None,
        description=f"The tools the model is offered (at most {MAX_TOOLS}): `builtin`, `function` (executed "
        "by your code: the run waits in `requires_action`) and `mcp` entries; default: the three built-ins.",
    )
    action_timeout_seconds: int = Field(
        DEFAULT_ACTION_TIMEOUT_SECONDS,
        ge=1,
        le=MAX_ACTION_TIMEOUT_SECONDS,
        description="How long the run waits for tool outputs or approvals before it fails `ACTION_EXPIRED`; "
        "default: the agent's, else 600.",
    )
    agent_id: Annotated[str, StringConstraints(min_length=1, max_length=40)] | None = Field(
        None,
        description="Run this agent (`agt_…`): its `model`, `instructions`, `tools` and "
        "`actionTimeoutSeconds` apply wherever the run gives none of its own.",
    )
    agent_version: int | None = Field(
        None, ge=1, description="The agent's version to run (needs `agentId`); default: its latest."
    )
    response_format: ResponseFormat | None = Field(
        None,
        description='`{"type":"text"}` (the default) or `{"type":"json_schema","name","schema",'
        '"strict"}`: the answer must then be one JSON document valid against `schema` (a JSON Schema), '
        "or the run fails `OUTPUT_INVALID`.",
    )


class RunError(ResponseModel):
    code: str
    message: str


class RunUsage(ResponseModel):
    input_tokens: int
    output_tokens: int


class RequiredToolCall(ResponseModel):
    id: str
    name: str
    arguments: Any = Field(description="As in `tool_call_start`: the parsed object when the arguments parse.")


class RequiredAction(ResponseModel):
    type: Literal["submit_tool_outputs", "approve_tool_calls"]
    tool_calls: list[RequiredToolCall]
    expires_at: str = Field(description="When the run fails `ACTION_EXPIRED` if still unanswered.")


class RunOut(ResponseModel):
    id: str
    thread_id: str
    status: Status = Field(
        description="queued → running → completed | failed | cancelled; queued → cancelled; running → "
        "requires_action (waiting for tool outputs or approvals) → running, or cancelled | failed."
    )
    model: str
    instructions: str | None
    automation_id: str | None
    metadata: dict[str, str]
    error: RunError | None
    usage: RunUsage
    created_at: Timestamp
    started_at: Timestamp | None
    ended_at: Timestamp | None
    tools: list[dict[str, Any]] | None = Field(description="The tool entries as given; null: the built-ins.")
    action_timeout_seconds: int
    required_action: RequiredAction | None = Field(description="What the run waits for; null unless waiting.")
    agent_id: str | None = Field(description="The agent the run was made from; null without one.")
    agent_version: int | None = Field(description="The version of the agent it ran; null without one.")
    response_format: dict[str, Any] | None = Field(
        description="The `responseFormat` as given (defaults filled in); null: text."
    )

    @classmethod
    def of(cls, run: Run) -> RunOut:
        error = None
        if run.error_code is not None:
            error = RunError(code=run.error_code, message=run.error_message or "")
        return cls(
            id=run.id,
            thread_id=run.thread_id,
            status=run.status,
            model=run.model,
            instructions=run.instructions,
            automation_id=run.automation_id,
            metadata=run.metadata,
            error=error,
            usage=RunUsage(input_tokens=run.input_tokens, output_tokens=run.output_tokens),
            created_at=run.created_at,
            started_at=run.started_at,
            ended_at=run.ended_at,
            tools=run.tools,
            action_timeout_seconds=run.action_timeout_seconds,
            required_action=RequiredAction.model_validate(run.required_action)
            if run.status == "requires_action" and run.required_action is not None
            else None,
            agent_id=run.agent_id,
            agent_version=run.agent_version,
            response_format=run.response_format,
        )


class ToolOutput(RequestModel):
    tool_call_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    output: Any = Field(description="A string or any JSON value: the call's `result`.")


class ToolOutputsSubmit(RequestModel):
    tool_outputs: Annotated[list[ToolOutput], Field(min_length=1, max_length=MAX_TOOLS * 4)]


class ToolDecision(RequestModel):
    tool_call_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    approve: bool
    reason: Annotated[str, StringConstraints(max_length=2000)] | None = None


class ApprovalsSubmit(RequestModel):
    decisions: Annotated[list[ToolDecision], Field(min_length=1, max_length=MAX_TOOLS * 4)]


class ArtifactOut(ResponseModel):
    id: str
    run_id: str
    thread_id: str
    name: str
    mime_type: str
    size: int = Field(description="Bytes of the content in UTF-8.")
    content: str
    created_at: Timestamp

    @classmethod
    def of(cls, artifact: Artifact) -> ArtifactOut:
        return cls(
            id=artifact.id,
            run_id=artifact.run_id,
            thread_id=artifact.thread_id,
            name=artifact.name,
            mime_type=artifact.mime_type,
            size=artifact.size,
            content=artifact.content,
            created_at=artifact.created_at,
        )


class StreamTokenCreate(RequestModel):
    ttl_seconds: int = Field(
        DEFAULT_TTL_SECONDS,
        ge=1,
        le=MAX_TTL_SECONDS,
        description="How long the token can open its stream; a stream opened in time runs to `[DONE]`.",
    )
    origins: Origins | None = Field(
        None,
        description="Origins whose pages may use the token (each must be in the organization's "
        "`allowedOrigins`); default: the organization's list.",
    )


class StreamTokenOut(ResponseModel):
    token: str = Field(description="`st_…`: shown once, stored only as a hash. Use it as `?token=`.")
    expires_at: Timestamp


class RunStreamTokenOut(StreamTokenOut):
    run_id: str


class ThreadStreamTokenOut(StreamTokenOut):
    thread_id: str
