from __future__ import annotations

from pydantic import Field

from threadline.kit.pagination import SearchPagination
from threadline.kit.schemas import ResponseModel
from threadline.messages.schemas import MessageOut
from threadline.threads.schemas import ThreadOut

SNIPPET = "The matching text, matches between <mark> and </mark> (the rest is not HTML-escaped)."


class ThreadHit(ThreadOut):
    snippet: str = Field(description=SNIPPET)


class MessageHit(MessageOut):
    snippet: str = Field(description=SNIPPET)


class ThreadResults(ResponseModel):
    data: list[ThreadHit]
    pagination: SearchPagination


class MessageResults(ResponseModel):
    data: list[MessageHit]
    pagination: SearchPagination
