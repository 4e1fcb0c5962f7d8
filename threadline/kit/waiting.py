"""Waiting (for an event with a timeout, between runs of a periodic chore) without ever losing a
cancellation.

Python 3.11's ``asyncio.timeout`` (and ``wait_for``) can turn a cancellation that arrives as the timeout
fires into a ``TimeoutError``: a loop that treats the timeout as "look again" then never stops, and whoever
awaits its end (a shutdown) waits forever. Seen here: an executor that its app's shutdown could not stop.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Whether ``event`` was set within ``seconds``; a cancellation of the caller always raises."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError from None
        return False
    return True


async def every(interval: float, step: Callable[[], Awaitable[object]], what: str) -> None:
    """``step`` now and then every ``interval`` seconds (jittered, so processes started together spread
    out), until cancelled; a failing step is logged and retried at the next turn.

    A database driver can turn the cancellation of a query into an error of its own: that error, raised
    while this task is being cancelled, stops the loop rather than sleeping a whole interval in a task a
    shutdown is waiting for."""
    while True:
        try:
            await step()
        except Exception:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError from None
            log.warning("%s failed; will retry", what, exc_info=True)
        await asyncio.sleep(interval * random.uniform(0.9, 1.1))  # noqa: S311 - not security
