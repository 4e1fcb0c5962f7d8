from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request

from threadline.access.principal import principal_of
from threadline.kit.clock import Clock
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.pagination import CursorPage
from threadline.messages import service
from threadline.messages.schemas import MessageCreate, MessageOut


class MessageServices(Protocol):
    """What the message handlers read from the process's services."""

    clock: Clock


ServicesDep = Annotated[MessageServices, Depends(get_services)]

router = APIRouter(prefix="/v1/threads/{threadId}/messages", tags=["messages"])


@router.get(
    "",
    operation_id="messages.list",
    response_model=CursorPage[MessageOut],
    responses=errors(400, 404, *AUTHENTICATED),
)
async def list_messages(
    threadId: str, request: Request, conn: ConnDep, page: CursorDep
) -> CursorPage[MessageOut]:
    """The thread's messages, oldest first."""
    found, next_cursor = await service.list_messages(
        conn, principal_of(request).organization_id, threadId, page
    )
    return CursorPage(data=[MessageOut.of(m) for m in found], next_cursor=next_cursor)


@router.post(
    "",
    operation_id="messages.create",
    status_code=201,
    response_model=MessageOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def create_message(
    threadId: str, body: MessageCreate, request: Request, conn: ConnDep, services: ServicesDep
) -> MessageOut:
    """Appends a message; the thread's `messageCount` and `updatedAt` move in the same transaction."""
    message = await service.append_message(
        conn,
        principal_of(request).organization_id,
        threadId,
        role=body.role,
        content=body.content,
        metadata=body.metadata,
        now=services.clock.now(),
    )
    return MessageOut.of(message)


@router.get(
    "/{messageId}",
    operation_id="messages.get",
    response_model=MessageOut,
    responses=errors(404, *AUTHENTICATED),
)
async def get_message(threadId: str, messageId: str, request: Request, conn: ConnDep) -> MessageOut:
    return MessageOut.of(
        await service.get_message(conn, principal_of(request).organization_id, threadId, messageId)
    )
