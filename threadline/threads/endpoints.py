from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, Request, Response

from threadline.access.principal import principal_of
from threadline.idempotency.carried import carry
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.deps import ConnDep, get_services
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.threads import fast_list, service
from threadline.threads.schemas import ThreadCreate, ThreadOut, ThreadUpdate
from threadline.threads.service import ThreadDeletion, ThreadInserts


class ThreadServices(Protocol):
    """What the thread handlers read from the process's services."""

    clock: Clock
    db: Database
    thread_deletion: ThreadDeletion
    thread_inserts: ThreadInserts


ServicesDep = Annotated[ThreadServices, Depends(get_services)]

# Begun by the list, which is served before routing and declared beside the code that serves it.
router = fast_list.router


@router.post(
    "",
    operation_id="threads.create",
    status_code=201,
    response_model=ThreadOut,
    responses=errors(400, 413, *AUTHENTICATED),
)
async def create_thread(body: ThreadCreate, request: Request, services: ServicesDep) -> Response:
    # Answered once the thread is committed, in a group commit shared with concurrent creates; hence no
    # request transaction here (``ConnDep`` would hold the write lock the group needs). The answer is
    # rendered before that commit so that an idempotency key's answer commits with the thread
    # (``idempotency.carried``).
    thread = service.new_thread(
        principal_of(request).organization_id, body.title, body.metadata, now=services.clock.now()
    )
    rendered = ThreadOut.of(thread).model_dump_json().encode()
    answer = carry(201, "application/json", rendered)
    await service.insert_committed(services.thread_inserts, thread, answer)
    return Response(rendered, status_code=201, media_type="application/json")


@router.get(
    "/{threadId}", operation_id="threads.get", response_model=ThreadOut, responses=errors(404, *AUTHENTICATED)
)
async def get_thread(threadId: str, request: Request, conn: ConnDep) -> ThreadOut:
    return ThreadOut.of(await service.get_thread(conn, principal_of(request).organization_id, threadId))


@router.patch(
    "/{threadId}",
    operation_id="threads.update",
    response_model=ThreadOut,
    responses=errors(400, 404, 413, *AUTHENTICATED),
)
async def update_thread(
    threadId: str, body: ThreadUpdate, request: Request, conn: ConnDep, services: ServicesDep
) -> ThreadOut:
    """Replaces the fields sent (``metadata`` as a whole map); leaves the others."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    organization_id = principal_of(request).organization_id
    thread = await service.update_thread(conn, organization_id, threadId, changes, services.clock.now())
    return ThreadOut.of(thread)


@router.delete(
    "/{threadId}",
    operation_id="threads.delete",
    response_model=ThreadOut,
    responses=errors(404, *AUTHENTICATED),
)
async def delete_thread(threadId: str, request: Request, conn: ConnDep, services: ServicesDep) -> ThreadOut:
    """Deletes the thread with its messages and runs (an active run is cancelled first, and charged for
    what it used); answers with the deleted thread."""
    thread = await services.thread_deletion(conn, principal_of(request).organization_id, threadId)
    return ThreadOut.of(thread)
