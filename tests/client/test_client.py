"""The SDK's retry rules, resources and stream reader, against a transport that records what it was
asked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from threadline.client import (
    APIConnectionError,
    InternalServerError,
    NotFoundError,
    RateLimitError,
    Threadline,
)


def client_answering(*responses: httpx.Response | Exception) -> tuple[Threadline, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client = Threadline("sk_test", "http://api.test/v1", transport=httpx.MockTransport(handle), max_retries=2)
    return client, seen


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("threadline.client._client.time.sleep", lambda _s: None)


def envelope(status: int, code: str) -> httpx.Response:
    return httpx.Response(
        status, json={"code": code, "message": "m", "operationId": "x", "missingContext": []}
    )


def test_get_is_retried_after_a_5xx_and_sends_the_bearer_key() -> None:
    client, seen = client_answering(envelope(503, "SERVICE_UNAVAILABLE"), httpx.Response(200, json={"ok": 1}))
    assert client.request("GET", "/me") == {"ok": 1}
    assert len(seen) == 2
    assert seen[0].headers["authorization"] == "Bearer sk_test"
    assert str(seen[0].url) == "http://api.test/v1/me"


def test_post_is_not_repeated_after_a_5xx() -> None:
    client, seen = client_answering(envelope(500, "INTERNAL_SERVER_ERROR"), httpx.Response(201, json={}))
    with pytest.raises(InternalServerError):
        client.keys.create(name="x", type="secret")
    assert len(seen) == 1


def test_post_is_retried_after_429_and_a_refused_connection() -> None:
    client, seen = client_answering(
        envelope(429, "TOO_MANY_REQUESTS"),
        httpx.ConnectError("refused"),
        httpx.Response(201, json={"id": "key_1"}),
    )
    assert client.keys.create(name="x", type="secret") == {"id": "key_1"}
    assert len(seen) == 3


def test_post_timeout_is_not_repeated() -> None:
    client, seen = client_answering(httpx.ReadTimeout("slow"), httpx.Response(201, json={}))
    with pytest.raises(APIConnectionError):
        client.projects.create(name="x")
    assert len(seen) == 1


def test_errors_carry_the_envelope() -> None:
    client, _ = client_answering(envelope(404, "NOT_FOUND"))
    with pytest.raises(NotFoundError) as raised:
        client.keys.get("key_x")
    assert raised.value.status == 404 and raised.value.code == "NOT_FOUND"


def test_rate_limit_gives_up_after_the_retries() -> None:
    client, seen = client_answering(*(envelope(429, "TOO_MANY_REQUESTS") for _ in range(3)))
    with pytest.raises(RateLimitError):
        client.me()
    assert len(seen) == 3


def test_iterate_follows_cursors() -> None:
    client, seen = client_answering(
        httpx.Response(200, json={"data": [{"id": "a"}], "nextCursor": "c2"}),
        httpx.Response(200, json={"data": [{"id": "b"}], "nextCursor": None}),
    )
    assert [k["id"] for k in client.keys.iterate()] == ["a", "b"]
    assert seen[1].url.params["cursor"] == "c2"


def test_run_and_artifact_resources_call_their_endpoints() -> None:
    run = {"id": "run_1", "status": "queued"}
    client, seen = client_answering(
        httpx.Response(201, json=run),
        httpx.Response(200, json={"data": [run], "nextCursor": "c2"}),
        httpx.Response(200, json={"data": [{"id": "run_0"}], "nextCursor": None}),
        httpx.Response(200, json=run),
        httpx.Response(200, json={**run, "status": "cancelled"}),
        httpx.Response(200, json={"data": [{"id": "art_1"}], "nextCursor": None}),
        httpx.Response(200, json={"id": "art_1"}),
    )
    assert client.runs.create("thr_1", input="hi", multitask_strategy="enqueue") == run
    assert [r["id"] for r in client.runs.iterate("thr_1")] == ["run_1", "run_0"]
    assert client.runs.get("run_1") == run
    assert client.runs.cancel("run_1")["status"] == "cancelled"
    page = client.runs.artifacts("run_1", limit=10)
    assert page.data == [{"id": "art_1"}] and page.next_cursor is None
    assert client.artifacts.get("art_1") == {"id": "art_1"}
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


def frame(seq: int) -> str:
    event = {"type": "text_chunk", "cursor": f"run_1.{seq}", "delta": f"w{seq} "}
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


def cursors(events: list[dict[str, Any]]) -> list[str]:
    return [event["cursor"] for event in events]


def test_stream_ends_at_done_and_skips_heartbeats_and_position_frames() -> None:
    multiline = 'id: run_1.2\ndata: {"cursor": "run_1.2",\ndata: "delta": "w2"}\n\n'
    client, seen = client_answering(
        sse(": ping\n\n", frame(1), "id: run_1.1\n\n", multiline, "data: [DONE]\n\n", frame(3))
    )
    events = list(client.runs.stream("run_1", cursor="run_1.0"))
    assert events[1] == {"cursor": "run_1.2", "delta": "w2"}
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
