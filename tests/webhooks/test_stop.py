"""The dispatcher's loop ends when it is closed, even when a wake and the close arrive together (a run's end
signalled while the process stops): on Python 3.11 ``asyncio.wait_for`` swallowed that cancel and the loop
went on polling after ``aclose``, in tests sending the next tests' deliveries."""

from __future__ import annotations

import asyncio

from threadline.kit.clock import Clock
from threadline.runtime import Services
from threadline.webhooks.dispatcher import WebhookDispatcher


async def test_a_wake_beside_the_close_does_not_keep_the_loop(services: Services) -> None:
    for _ in range(20):
        dispatcher = WebhookDispatcher(services.db, services.signals, Clock(), services.egress, None)
        dispatcher.start()
        assert dispatcher._loop is not None
        for _ in range(50):  # until the first round is done and the loop waits to be woken
            await asyncio.sleep(0.01)
            stack = dispatcher._loop.get_stack()
            if stack and stack[-1].f_code.co_name == "_run":
                break
        dispatcher.wake()
        await asyncio.sleep(0)  # the inner wait completes; the loop has not resumed yet
        await dispatcher.aclose()
        assert dispatcher._loop.done()
