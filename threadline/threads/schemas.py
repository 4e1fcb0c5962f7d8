from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from threadline.kit.metadata import Metadata
from threadline.kit.schemas import NullRefused, RequestModel, ResponseModel, Timestamp
from threadline.threads.repository import Thread

MAX_TITLE_CHARS = 256
Title = Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS)]


class ThreadCreate(RequestModel):
    title: Title | None = Field(None, description=f"Up to {MAX_TITLE_CHARS} characters.")
    metadata: Metadata = Field(default_factory=dict)


class ThreadUpdate(RequestModel):
    """Fields present are replaced (``metadata`` as a whole); fields absent are left as they are."""

    title: Title | None = Field(None, description=f"Up to {MAX_TITLE_CHARS} characters; null clears it.")
    # Absent keeps the map; null is refused (400), so the contract does not offer it.
    metadata: Annotated[Metadata | None, NullRefused()] = Field(
        None, description="Replaces the whole map; `{}` clears it."
    )


class ThreadOut(ResponseModel):
    id: str
    title: str | None
    metadata: dict[str, str]
    active_run_id: str | None = Field(description="The running run, else the oldest queued one, else null.")
    message_count: int
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, thread: Thread) -> ThreadOut:
        return cls(
            id=thread.id,
            title=thread.title,
            metadata=thread.metadata,
            active_run_id=thread.active_run_id,
            message_count=thread.message_count,
            created_at=thread.created_at,
            updated_at=thread.updated_at,
        )
