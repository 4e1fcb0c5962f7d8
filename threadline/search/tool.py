"""The agent's ``search_messages`` tool: the organization's messages, best matches first, through the same
backend as ``GET /v1/search/messages``."""

from __future__ import annotations

from pydantic import Field

from threadline.agent.tools import Arguments, Tool, ToolContext, ToolResult, tool
from threadline.kit.errors import BadRequest
from threadline.kit.pagination import PageParams
from threadline.search.backend import MessageFilter, SearchBackend
from threadline.search.query import parse


class SearchMessagesArgs(Arguments):
    query: str = Field(min_length=1, max_length=512, description="Words to find; stems and prefixes match.")
    limit: int = Field(5, ge=1, le=20)


def search_messages_tool(search: SearchBackend) -> Tool:
    async def run(context: ToolContext, args: SearchMessagesArgs) -> ToolResult:
        try:
            query = parse(args.query)
        except BadRequest as error:
            return ToolResult(error.message, is_error=True)
        async with context.db.transaction(write=False, long=True) as conn:
            hits = await search.messages(
                conn, context.organization_id, query, MessageFilter(), PageParams(page=1, limit=args.limit)
            )
        matches = [
            {"messageId": row["id"], "threadId": row["thread_id"], "role": row["role"], "snippet": snippet}
            for row, snippet in hits.rows
        ]
        return ToolResult({"totalResults": hits.total, "messages": matches})

    return tool(
        "search_messages",
        "Full-text search over the organization's thread messages, best matches first.",
        SearchMessagesArgs,
        run,
    )
