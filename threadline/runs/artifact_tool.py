"""The agent's ``create_artifact`` tool: a document saved for the user, written with its event."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from threadline.agent.tools import Arguments, ToolContext, ToolResult, tool
from threadline.kit.db import Conn
from threadline.kit.ids import new_id
from threadline.runs.artifacts import (
    MAX_CONTENT_BYTES,
    MAX_MIME_TYPE_CHARS,
    MAX_NAME_CHARS,
    Artifact,
    ArtifactRepository,
)


class CreateArtifactArgs(Arguments):
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    mime_type: str = Field("text/plain", alias="mimeType", min_length=1, max_length=MAX_MIME_TYPE_CHARS)
    content: str


async def _create_artifact(context: ToolContext, args: CreateArtifactArgs) -> ToolResult:
    size = len(args.content.encode())
    if size > MAX_CONTENT_BYTES:
        return ToolResult(f"content is {size} bytes; the limit is {MAX_CONTENT_BYTES}", is_error=True)
    recorder = context.recorder
    artifact_id = new_id("art")

    async def store(conn: Conn, now: datetime) -> None:
        artifact = Artifact(
            id=artifact_id,
            organization_id=recorder.organization_id,
            run_id=recorder.run_id,
            thread_id=recorder.thread_id,
            name=args.name,
            mime_type=args.mime_type,
            size=size,
            content=args.content,
            created_at=now,
        )
        await ArtifactRepository(conn, artifact.organization_id).insert(artifact)

    payload = {"artifactId": artifact_id, "name": args.name, "mimeType": args.mime_type}
    await recorder.emit("artifact", {**payload, "content": args.content}, effect=store)
    return ToolResult({**payload, "size": size})


CREATE_ARTIFACT = tool(
    "create_artifact",
    "Saves a document (a report, a snippet of code) for the user, attached to this run.",
    CreateArtifactArgs,
    _create_artifact,
)
