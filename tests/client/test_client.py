"""The SDK's retry rules, resources and stream reader, against a transport that records what it was
asked."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from threadline_client import (
    APIConnectionError,
    APITimeoutError,
    ConflictError,
    NotFoundError,
    RateLimitError,
)
from threadline_client.types import Key, TextChunk, UnknownEvent

from tests.client.wire import ARTIFACT, KEY, ME, RUN, client_answering


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("threadline_client._transport.time.sleep", lambda _s: None)


def envelope(status: int, code: str, reason: str | None = None) -> httpx.Response:
    body = {"code": code, "message": "m", "operationId": "x", "missingContext": []}
    return httpx.Response(status, json=body if reason is None else {**body, "reason": reason})


def test_get_is_retried_after_a_5xx_and_sends_the_bearer_key() -> None:
    client, seen = client_answering(envelope(503, "SERVICE_UNAVAILABLE"), httpx.Response(200, json=ME))
    me = client.me.get()
    assert (me.organization.name, me.key.id) == ("Acme", "key_1")
    assert len(seen) == 2
    assert seen[0].headers["authorization"] == "Bearer sk_test"
    assert str(seen[0].url) == "http://api.test/v1/me"


def test_post_is_repeated_after_a_5xx_with_one_idempotency_key() -> None:
    client, seen = client_answering(
        envelope(500, "INTERNAL_SERVER_ERROR"),
        envelope(409, "CONFLICT", reason="IDEMPOTENCY_KEY_IN_USE"),
        httpx.Response(201, json={**KEY, "key": "sk_live_secret"}),
    )
    assert client.keys.create(name="x", type="secret").key == "sk_live_secret"
    keys = [request.headers["idempotency-key"] for request in seen]
    assert len(keys) == 3 and len(set(keys)) == 1
    client, again = client_answering(httpx.Response(201, json={**KEY, "key": "sk_live_secret"}))
    client.keys.create(name="x", type="secret")
    assert again[0].headers["idempotency-key"] != keys[0]  # a new call, a new key


def test_a_key_reused_elsewhere_is_not_repeated() -> None:
    client, seen = client_answering(
        envelope(409, "CONFLICT", reason="IDEMPOTENCY_KEY_REUSED"), httpx.Response(201, json={})
    )
    with pytest.raises(ConflictError):
        client.keys.create(name="x", type="secret")
    assert len(seen) == 1


def test_post_is_retried_after_429_and_a_refused_connection() -> None:
    client, seen = client_answering(
        envelope(429, "TOO_MANY_REQUESTS"),
        httpx.ConnectError("refused"),
        httpx.Response(201, json={**KEY, "key": "sk_live_secret"}),
    )
    assert client.keys.create(name="x", type="secret").key == "sk_live_secret"
    assert len(seen) == 3


def test_timeouts_are_repeated_with_the_same_key() -> None:
    client, seen = client_answering(*(httpx.ReadTimeout("slow") for _ in range(3)))
    with pytest.raises(APITimeoutError):
        client.projects.create(name="x")
    assert len(seen) == 3 and len({r.headers["idempotency-key"] for r in seen}) == 1
    client, seen = client_answering(*(httpx.ReadTimeout("slow") for _ in range(3)))
    with pytest.raises(APITimeoutError):
        client.keys.get("key_1")
    assert len(seen) == 3
    client, seen = client_answering(httpx.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError):
        client.with_options(max_retries=0).keys.get("key_1")
    assert len(seen) == 1


def test_errors_carry_the_envelope() -> None:
    body = {
        "code": "NOT_FOUND",
        "message": "No such key.",
        "operationId": "keys.get",
        "missingContext": ["keyId"],
        "reason": "KEY_NOT_FOUND",
    }
    client, _ = client_answering(httpx.Response(404, json=body, headers={"x-request-id": "req_9"}))
    with pytest.raises(NotFoundError) as raised:
        client.keys.get("key_x")
    error = raised.value
    assert (error.status, error.code, error.reason, error.operation_id) == (
        404,
        "NOT_FOUND",
        "KEY_NOT_FOUND",
        "keys.get",
    )
    assert (error.request_id, error.missing_context) == ("req_9", ["keyId"])


def test_rate_limit_gives_up_after_the_retries() -> None:
    client, seen = client_answering(*(envelope(429, "TOO_MANY_REQUESTS") for _ in range(3)))
    with pytest.raises(RateLimitError):
        client.me.get()
    assert len(seen) == 3


def test_iterate_follows_cursors() -> None:
    client, seen = client_answering(
        httpx.Response(200, json={"data": [{**KEY, "id": "a"}], "nextCursor": "c2"}),
        httpx.Response(200, json={"data": [{**KEY, "id": "b"}], "nextCursor": None}),
    )
    first = client.keys.list(limit=1, type="secret")
    assert [k.id for k in first.data] == ["a"] and first.next_cursor == "c2"
    assert len(seen) == 1
    walked = list(first)  # this page, then every next one
    assert all(isinstance(k, Key) for k in walked) and [k.id for k in walked] == ["a", "b"]
    assert dict(seen[1].url.params) == {"limit": "1", "type": "secret", "cursor": "c2"}


def test_run_and_artifact_resources_call_their_endpoints() -> None:
    client, seen = client_answering(
        httpx.Response(201, json=RUN),
        httpx.Response(200, json={"data": [RUN], "nextCursor": "c2"}),
        httpx.Response(200, json={"data": [{**RUN, "id": "run_0"}], "nextCursor": None}),
        httpx.Response(200, json=RUN),
        httpx.Response(200, json={**RUN, "status": "cancelled"}),
        httpx.Response(200, json={"data": [ARTIFACT], "nextCursor": None}),
        httpx.Response(200, json=ARTIFACT),
    )
    assert client.runs.create("thr_1", input="hi", multitask_strategy="enqueue").id == "run_1"
    assert [r.id for r in client.runs.list("thr_1", limit=100)] == ["run_1", "run_0"]
    assert client.runs.get("run_1").usage.input_tokens == 0
    assert client.runs.cancel("run_1").status == "cancelled"
    page = client.artifacts.list("run_1", limit=10)
    assert [a.mime_type for a in page.data] == ["text/markdown"] and page.next_cursor is None
    assert client.artifacts.get("art_1").to_dict() == ARTIFACT
    assert [(r.method, r.url.path, dict(r.url.params)) for r in seen] == [
        ("POST", "/v1/threads/thr_1/runs", {}),
        ("GET", "/v1/threads/thr_1/runs", {"limit": "100"}),
        ("GET", "/v1/threads/thr_1/runs", {"limit": "100", "cursor": "c2"}),
        ("GET", "/v1/runs/run_1", {}),
        ("POST", "/v1/runs/run_1/cancel", {}),
        ("GET", "/v1/runs/run_1/artifacts", {"limit": "10"}),
        ("GET", "/v1/artifacts/art_1", {}),
    ]
    assert json.loads(seen[0].content) == {"input": "hi", "multitaskStrategy": "enqueue"}


def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr("threadline_client._transport.time.sleep", waits.append)
    refused = httpx.Response(429, headers={"retry-after": "3"}, json={"code": "TOO_MANY_REQUESTS"})
    client, seen = client_answering(
        refused, envelope(503, "SERVICE_UNAVAILABLE"), httpx.Response(200, json=ME)
    )
    client.me.get()
    assert len(seen) == 3
    assert waits[0] == 3.0 and 0.5 <= waits[1] <= 1.0  # then exponential backoff with jitter


def frame(seq: int) -> str:
    event = {
        "type": "text_chunk",
        "cursor": f"run_1.{seq}",
        "runId": "run_1",
        "threadId": "thr_1",
        "createdAt": "2026-11-25T00:00:00Z",
        "messageId": "msg_1",
        "delta": f"w{seq} ",
    }
    return f"id: run_1.{seq}\ndata: {json.dumps(event)}\n\n"


def sse(*parts: str) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content="".join(parts).encode())


class Breaking(httpx.SyncByteStream):
    """A body that fails after sending ``text`` (a dropped connection)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __iter__(self) -> Iterator[bytes]:
        yield self.text.encode()
        raise httpx.ReadError("connection reset")


def cursors(events: list[Any]) -> list[str]:
    return [event.cursor for event in events]


def test_stream_ends_at_done_and_skips_heartbeats_and_position_frames() -> None:
    multiline = 'id: run_1.2\ndata: {"type": "future_thing", "cursor": "run_1.2",\ndata: "delta": "w2"}\n\n'
    client, seen = client_answering(
        sse(": ping\n\n", frame(1), "id: run_1.1\n\n", multiline, "data: [DONE]\n\n", frame(3))
    )
    events = list(client.runs.stream("run_1", cursor="run_1.0"))
    assert isinstance(events[0], TextChunk) and events[0].delta == "w1 "
    assert isinstance(events[1], UnknownEvent)  # a type this client does not know, passed through
    assert events[1].to_dict() == {"type": "future_thing", "cursor": "run_1.2", "delta": "w2"}
    assert cursors(events) == ["run_1.1", "run_1.2"]
    assert len(seen) == 1
    assert (seen[0].url.path, seen[0].url.params["cursor"]) == ("/v1/runs/run_1/stream", "run_1.0")


def test_a_stream_cut_inside_a_frame_resumes_after_the_last_whole_frame() -> None:
    """Neither the id nor the data of a frame the connection broke inside counts: it comes again."""
    partial = frame(3)[:30]  # its id line whole, its data cut
    client, seen = client_answering(
        sse(frame(1), frame(2), partial),  # closed without [DONE]
        httpx.Response(200, stream=Breaking(frame(3) + frame(4) + "id: run_1.5\n")),
        sse(frame(5), "data: [DONE]\n\n"),
    )
    assert "id: run_1.3" in partial
    assert cursors(list(client.threads.stream("thr_1"))) == [f"run_1.{i}" for i in range(1, 6)]
    assert [r.url.params.get("cursor") for r in seen] == [None, "run_1.2", "run_1.4"]
    assert seen[0].url.path == "/v1/threads/thr_1/stream"


def test_a_stream_retries_unavailable_and_raises_other_errors_at_once() -> None:
    client, seen = client_answering(
        envelope(503, "SERVICE_UNAVAILABLE"), httpx.ConnectError("refused"), sse(frame(1), "data: [DONE]\n\n")
    )
    assert cursors(list(client.runs.stream("run_1"))) == ["run_1.1"]
    assert len(seen) == 3

    client, seen = client_answering(envelope(404, "NOT_FOUND"))
    with pytest.raises(NotFoundError):
        list(client.runs.stream("run_x"))
    assert len(seen) == 1


def test_a_stream_gives_up_after_consecutive_failures() -> None:
    client, seen = client_answering(*(httpx.ConnectError("refused") for _ in range(6)))
    with pytest.raises(APIConnectionError):
        list(client.runs.stream("run_1"))
    assert len(seen) == 6  # max(max_retries, 5) retries


def test_retry_after_as_an_http_date_or_garbage() -> None:
    from threadline_client._core import backoff

    in_five = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.5 <= backoff(0, in_five) <= 5.0
    assert backoff(0, "999") == 60.0  # capped
    assert 0.25 <= backoff(0, "soon") <= 0.5  # unreadable: the usual backoff
