from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from threadline.kit.metadata import Metadata
from threadline.kit.schemas import RequestModel, ResponseModel, Timestamp
from threadline.messages.repository import Message, Role

MAX_CONTENT_BYTES = 256 * 1024


def _bounded(content: str) -> str:
    if len(content.encode()) > MAX_CONTENT_BYTES:
        raise ValueError(f"content is larger than {MAX_CONTENT_BYTES} bytes (UTF-8)")
    return content


Content = Annotated[str, AfterValidator(_bounded)]


class MessageCreate(RequestModel):
    role: Role = Field("user", description="`user` (default), `assistant`, `system` or `tool`.")
    content: Content = Field(description=f"Text, up to {MAX_CONTENT_BYTES // 1024} KiB in UTF-8.")
    metadata: Metadata = Field(default_factory=dict)


class MessageOut(ResponseModel):
    id: str
    thread_id: str
    run_id: str | None = Field(description="The run that wrote it; null when a client did.")
    role: Role
    content: str
    metadata: dict[str, str]
    created_at: Timestamp

    @classmethod
    def of(cls, message: Message) -> MessageOut:
        return cls(
            id=message.id,
            thread_id=message.thread_id,
            run_id=message.run_id,
            role=message.role,
            content=message.content,
            metadata=message.metadata,
            created_at=message.created_at,
        )
