"""The messages a run announced but did not finish writing, written at its end.

An assistant message is written with its ``text_complete`` event. A run that ends between a turn's
``message_started`` and its ``text_complete`` (cancelled, failed by its model, timed out, its executor lost
or stopped) would leave a ``messageId`` in its events that no message has; the run's end, which every end
goes through once and in one transaction, writes those messages: the text their ``text_chunk`` events
streamed (possibly none), and ``metadata.incomplete`` = the run's status. Messages are never updated after
they are written (search seals them), so this is the only write such a message gets.
"""

from __future__ import annotations

import json
from datetime import datetime

from threadline.kit.db import Conn
from threadline.messages.repository import MessageRepository
from threadline.messages.service import append_message
from threadline.runs import events
from threadline.runs.repository import Run

_STARTED = "message_started"
_TEXT = "text_chunk"
_COMPLETE = "text_complete"


async def write_unfinished_messages(conn: Conn, run: Run, status: str, now: datetime) -> int:
    """Writes the run's announced but unwritten messages; returns how many. The caller holds the run's
    lock: nothing the executor could still commit escapes (its commits wait for that lock, then find the
    run ended). A run that completed has none (its agent ended every turn it began, and everything it
    emitted was committed before its end), so its events are not read: a long answer has many."""
    if status == "completed":
        return 0
    repository = events.EventRepository(conn, run.organization_id)
    announced = await repository.of_types(run.id, (_STARTED, _COMPLETE))
    started: dict[str, None] = {}  # the messageIds announced, in order (the agent's are all assistant's)
    for event in announced:
        message_id = json.loads(event.data)["messageId"]
        if event.type == _STARTED:
            started[message_id] = None
        else:
            started.pop(message_id, None)  # its message was written with it
    if not started:
        return 0
    existing = await MessageRepository(conn, run.organization_id).existing(run.thread_id, list(started))
    missing = [message_id for message_id in started if message_id not in existing]
    if not missing:
        return 0
    texts: dict[str, list[str]] = {message_id: [] for message_id in missing}
    for event in await repository.of_types(run.id, (_TEXT,)):
        payload = json.loads(event.data)
        if payload["messageId"] in texts:
            texts[payload["messageId"]].append(payload["delta"])
    for message_id in missing:
        await append_message(
            conn,
            run.organization_id,
            run.thread_id,
            role="assistant",
            content="".join(texts[message_id]),
            metadata={"incomplete": status},
            run_id=run.id,
            message_id=message_id,
            now=now,
        )
    return len(missing)
