"""What the agent needs of the run it acts in, as a protocol the agent owns and ``runs`` implements
(``runs.recorder.RunRecorder``): the agent sits below ``runs`` and so never imports it, while the executor,
above, hands the agent its recorder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol

from threadline.agent.models import Usage
from threadline.kit.db import Conn

# A write that belongs to an event (the assistant's message with its ``text_complete``, an artifact), run in
# the transaction that records the event, and dated as the event is (the run's clock at that commit).
Effect = Callable[[Conn, datetime], Awaitable[None]]


class Recorder(Protocol):
    """The run's events, in the order emitted; an effect commits with its event or not at all."""

    @property
    def organization_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def thread_id(self) -> str: ...

    async def emit(self, type_: str, payload: dict[str, Any], *, effect: Effect | None = None) -> None: ...

    def add_usage(self, usage: Usage) -> None: ...
