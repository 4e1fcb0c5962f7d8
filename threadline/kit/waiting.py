"""Waiting for an event with a timeout, without ever losing a cancellation.

Python 3.11's ``asyncio.timeout`` (and ``wait_for``) can turn a cancellation that arrives as the timeout
fires into a ``TimeoutError``: a loop that treats the timeout as "look again" then never stops, and whoever
awaits its end (a shutdown) waits forever. Seen here: an executor that its app's shutdown could not stop.
"""

from __future__ import annotations

import asyncio


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
