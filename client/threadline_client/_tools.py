"""Answering a run's function calls with the caller's Python functions while reading its stream
(``client.runs.stream(run_id, tools={"lookup_order": lookup_order})``).

The stream shows ``run_requires_action`` and stays open while the run waits; the helper answers there, in
the same loop, so a caller who writes functions never writes the protocol. Before calling anything it asks
the API whether the run still waits on exactly these calls: a stream replays its past, and a function with
effects in the customer's world (a refund, a ticket) must not run again for an action answered long ago.
It answers only ``submit_tool_outputs`` actions whose every call has a function (the API takes a turn's
outputs in one request); an approval, or a call it has no function for, is passed on unanswered for the
caller to answer. A function's exception propagates: the run keeps waiting (until ``expiresAt``) rather
than telling the model a made-up result.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from typing import Any, ParamSpec, overload

from threadline_client._core import Call
from threadline_client._endpoints import Build, Resource, Streaming
from threadline_client._events import RunEvent, RunRequiresAction
from threadline_client._models import RequiredAction, Run
from threadline_client._transport import AsyncTransport, SyncTransport

P = ParamSpec("P")
ToolFunctions = Mapping[str, Callable[..., Any]]

NOT_AN_OBJECT = "the model's arguments are not a JSON object"


def outputs_body(tool_outputs: Mapping[str, Any]) -> dict[str, Any]:
    """``{toolCallId: output}`` as the wire's ``toolOutputs`` list."""
    return {"toolOutputs": [{"toolCallId": key, "output": value} for key, value in tool_outputs.items()]}


def decisions_body(approved: Sequence[str], rejected: Mapping[str, str | None]) -> dict[str, Any]:
    """Approved ids and rejected ids (with their reasons) as the wire's ``decisions`` list."""
    decisions: list[dict[str, Any]] = [{"toolCallId": key, "approve": True} for key in approved]
    for key, reason in rejected.items():
        decisions.append({"toolCallId": key, "approve": False, **({"reason": reason} if reason else {})})
    return {"decisions": decisions}


def submit_call(run_id: str, tool_outputs: Mapping[str, Any]) -> Call[Run]:
    return Call(
        "POST",
        f"/runs/{run_id}/tool-outputs",
        Run.model_validate,
        json=outputs_body(tool_outputs),
        operation_id="runs.submitToolOutputs",
    )


def _answerable(event: RunEvent, tools: ToolFunctions) -> RequiredAction | None:
    if not isinstance(event, RunRequiresAction):
        return None
    action = event.required_action
    if action.type != "submit_tool_outputs" or any(call.name not in tools for call in action.tool_calls):
        return None
    return action


def _still_waiting(run: Run, action: RequiredAction) -> bool:
    pending = run.required_action
    if run.status != "requires_action" or pending is None or pending.type != action.type:
        return False
    return [call.id for call in pending.tool_calls] == [call.id for call in action.tool_calls]


def _invoke(tools: ToolFunctions, name: str, arguments: Any) -> Any:
    """The function's return value (maybe awaitable), or the error output for arguments that are not an
    object (the model wrote something else; it reads the error and may try again)."""
    if not isinstance(arguments, dict):
        return {"error": NOT_AN_OBJECT, "arguments": arguments}
    return tools[name](**arguments)


def answering_sync(
    transport: SyncTransport, run_id: str, events: Generator[RunEvent, None, None], tools: ToolFunctions
) -> Generator[RunEvent, None, None]:
    try:
        for event in events:
            action = _answerable(event, tools)
            if action is not None and _still_waiting(transport.send(_get(run_id)), action):
                outputs = {call.id: _invoke(tools, call.name, call.arguments) for call in action.tool_calls}
                transport.send(submit_call(run_id, outputs))
            yield event
    finally:
        events.close()


async def answering_async(
    transport: AsyncTransport, run_id: str, events: AsyncGenerator[RunEvent, None], tools: ToolFunctions
) -> AsyncGenerator[RunEvent, None]:
    try:
        async for event in events:
            action = _answerable(event, tools)
            if action is not None and _still_waiting(await transport.send(_get(run_id)), action):
                outputs: dict[str, Any] = {}
                for call in action.tool_calls:
                    value = _invoke(tools, call.name, call.arguments)
                    outputs[call.id] = await value if inspect.isawaitable(value) else value
                await transport.send(submit_call(run_id, outputs))
            yield event
    finally:
        await events.aclose()


def _get(run_id: str) -> Call[Run]:
    return Call("GET", f"/runs/{run_id}", Run.model_validate, operation_id="runs.get")


class ToolStreaming(Streaming[P, RunEvent]):
    """``runs.stream``: the plain stream, or with ``tools=`` the stream that answers function calls. The
    description of the request ignores ``tools``; this descriptor takes it out before building."""

    @overload
    def __get__(self, obj: None, owner: type) -> ToolStreaming[P]: ...
    @overload
    def __get__(
        self, obj: Resource[SyncTransport], owner: type
    ) -> Callable[P, Generator[RunEvent, None, None]]: ...
    @overload
    def __get__(
        self, obj: Resource[AsyncTransport], owner: type
    ) -> Callable[P, AsyncGenerator[RunEvent, None]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type) -> Any:
        if obj is None:
            return self
        build, transport = self._build, obj._transport

        def stream(run_id: str, *args: Any, tools: ToolFunctions | None = None, **kwargs: Any) -> Any:
            events = transport.stream(build(obj, run_id, *args, **kwargs))
            if not tools:
                return events
            if isinstance(transport, AsyncTransport):
                return answering_async(transport, run_id, events, tools)
            return answering_sync(transport, run_id, events, tools)

        return functools.wraps(self._describe, assigned=("__name__", "__qualname__", "__doc__"))(stream)


def tool_streaming(operation_id: str) -> Callable[[Build[P, RunEvent]], ToolStreaming[P]]:
    return lambda build: ToolStreaming(operation_id, build)
