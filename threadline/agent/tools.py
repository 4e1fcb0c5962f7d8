"""The built-in tools. Each acts for the run's organization only: the organization comes from the run,
never from the model's arguments, so no prompt can reach another tenant's data.

A tool answers with a JSON-able result; a failure (bad arguments, nothing found is not one) is returned as
``isError`` with a message the model can read and correct, not raised: the run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from threadline.agent.models import ToolCall, ToolSpec
from threadline.kit.clock import isoformat, utcnow
from threadline.kit.db import Conn, Database
from threadline.kit.errors import BadRequest
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams, PageParams
from threadline.runs.artifacts import (
    MAX_CONTENT_BYTES,
    MAX_MIME_TYPE_CHARS,
    MAX_NAME_CHARS,
    Artifact,
    ArtifactRepository,
)
from threadline.runs.recorder import RunRecorder
from threadline.search.backend import MessageFilter, SearchBackend
from threadline.search.query import parse
from threadline.telemetry import service as logs
from threadline.telemetry.repository import LogFilters
from threadline.telemetry.schemas import Level


@dataclass(frozen=True, slots=True)
class ToolContext:
    db: Database
    search: SearchBackend
    recorder: RunRecorder

    @property
    def organization_id(self) -> str:
        return self.recorder.organization_id


@dataclass(frozen=True, slots=True)
class ToolResult:
    value: Any
    is_error: bool = False


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SearchMessagesArgs(_Arguments):
    query: str = Field(min_length=1, max_length=512, description="Words to find; stems and prefixes match.")
    limit: int = Field(5, ge=1, le=20)


class QueryLogsArgs(_Arguments):
    level: Level | None = Field(None, description="This level and above.")
    contains: str | None = Field(None, max_length=512, description="Text the message contains.")
    since_minutes: int = Field(60, alias="sinceMinutes", ge=1, le=60 * 24 * 90)
    limit: int = Field(20, ge=1, le=50)


class CreateArtifactArgs(_Arguments):
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    mime_type: str = Field("text/plain", alias="mimeType", min_length=1, max_length=MAX_MIME_TYPE_CHARS)
    content: str


async def _search_messages(context: ToolContext, args: SearchMessagesArgs) -> ToolResult:
    try:
        query = parse(args.query)
    except BadRequest as error:
        return ToolResult(error.message, is_error=True)
    async with context.db.transaction(write=False, long=True) as conn:
        hits = await context.search.messages(
            conn, context.organization_id, query, MessageFilter(), PageParams(page=1, limit=args.limit)
        )
    matches = [
        {"messageId": row["id"], "threadId": row["thread_id"], "role": row["role"], "snippet": snippet}
        for row, snippet in hits.rows
    ]
    return ToolResult({"totalResults": hits.total, "messages": matches})


async def _query_logs(context: ToolContext, args: QueryLogsArgs) -> ToolResult:
    try:
        query = parse(args.contains, literal=True) if args.contains else None
    except BadRequest as error:
        return ToolResult(error.message, is_error=True)
    filters = LogFilters(
        level=args.level, since=utcnow() - timedelta(minutes=args.since_minutes), query=query
    )
    async with context.db.transaction(write=False) as conn:
        records, _ = await logs.list_logs(
            conn, context.organization_id, filters, CursorParams(limit=args.limit, after_id=None)
        )
    found = [
        {
            "id": r.id,
            "level": r.level,
            "message": r.message,
            "timestamp": isoformat(r.timestamp),
            "projectId": r.project_id,
            "attributes": r.attributes,
        }
        for r in records
    ]
    return ToolResult({"records": found})


async def _create_artifact(context: ToolContext, args: CreateArtifactArgs) -> ToolResult:
    size = len(args.content.encode())
    if size > MAX_CONTENT_BYTES:
        return ToolResult(f"content is {size} bytes; the limit is {MAX_CONTENT_BYTES}", is_error=True)
    recorder = context.recorder
    artifact = Artifact(
        id=new_id("art"),
        organization_id=recorder.organization_id,
        run_id=recorder.run_id,
        thread_id=recorder.thread_id,
        name=args.name,
        mime_type=args.mime_type,
        size=size,
        content=args.content,
        created_at=utcnow(),
    )

    async def store(conn: Conn) -> None:
        await ArtifactRepository(conn, artifact.organization_id).insert(artifact)

    payload = {"artifactId": artifact.id, "name": artifact.name, "mimeType": artifact.mime_type}
    await recorder.emit("artifact", {**payload, "content": artifact.content}, effect=store)
    return ToolResult({**payload, "size": size})


@dataclass(frozen=True, slots=True)
class _Tool:
    spec: ToolSpec
    arguments: type[_Arguments]
    run: Callable[[ToolContext, Any], Awaitable[ToolResult]]


def _tool(
    name: str,
    description: str,
    arguments: type[_Arguments],
    run: Callable[[ToolContext, Any], Awaitable[ToolResult]],
) -> _Tool:
    schema = arguments.model_json_schema(by_alias=True)
    schema.pop("title", None)
    return _Tool(ToolSpec(name, description, schema), arguments, run)


TOOLS = {
    tool.spec.name: tool
    for tool in (
        _tool(
            "search_messages",
            "Full-text search over the organization's thread messages, best matches first.",
            SearchMessagesArgs,
            _search_messages,
        ),
        _tool(
            "query_logs",
            "The organization's recent logs, newest first; optionally at or above a level, containing text.",
            QueryLogsArgs,
            _query_logs,
        ),
        _tool(
            "create_artifact",
            "Saves a document (a report, a snippet of code) for the user, attached to this run.",
            CreateArtifactArgs,
            _create_artifact,
        ),
    )
}
SPECS = [tool.spec for tool in TOOLS.values()]


async def call_tool(context: ToolContext, call: ToolCall) -> ToolResult:
    tool = TOOLS.get(call.name)
    if tool is None:
        return ToolResult(f"unknown tool {call.name!r}; tools: {', '.join(TOOLS)}", is_error=True)
    try:
        raw = json.loads(call.arguments or "{}")
        arguments = tool.arguments.model_validate(raw)
    except json.JSONDecodeError as error:
        return ToolResult(f"arguments are not JSON: {error}", is_error=True)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
        )
        return ToolResult(f"invalid arguments: {problems}", is_error=True)
    return await tool.run(context, arguments)
