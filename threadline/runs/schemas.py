from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from threadline.keys.stream_tokens import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS
from threadline.kit.metadata import Metadata
from threadline.kit.schemas import RequestModel, ResponseModel, Timestamp
from threadline.messages.schemas import MAX_CONTENT_BYTES, Content
from threadline.runs.artifacts import Artifact
from threadline.runs.repository import Run, Status
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


class RunError(ResponseModel):
    code: str
    message: str


class RunUsage(ResponseModel):
    input_tokens: int
    output_tokens: int


class RunOut(ResponseModel):
    id: str
    thread_id: str
    status: Status = Field(
        description="queued → running → completed | failed | cancelled; queued → cancelled."
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
        )


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
