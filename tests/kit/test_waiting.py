"""wait_event: set, timed out, cancelled.

The race it guards against (a cancel arriving as the timeout fires, turned into a TimeoutError by Python
3.11) hung an app's shutdown in a full test run; no test here makes that timing happen on demand."""

from __future__ import annotations

import asyncio

import pytest

from threadline.kit.waiting import wait_event


async def test_set_and_timeout() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 1) is True


async def test_a_loop_that_waits_again_after_each_timeout_stops_when_cancelled() -> None:
    for delay in [0.0, 0.001, 0.002, 0.005, 0.01]:
        event = asyncio.Event()

        async def looping(event: asyncio.Event = event) -> None:
            while True:
                await wait_event(event, 0.002)

        task = asyncio.create_task(looping())
        await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)
