"""The SDK's retry rules, against a transport that records what it was asked."""

from __future__ import annotations

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
