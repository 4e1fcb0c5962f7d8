"""Threads, one class per operation: no key, wrong key type, other organization, bad input, success."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.limiter_answers import limiter_answers
from tests.support import Tenant, assert_error, new_thread
from threadline.kit.pagination import CursorPage
from threadline.runtime import Services
from threadline.threads.schemas import ThreadOut
from threadline.threads.service import get_thread

THREAD_FIELDS = {"id", "title", "metadata", "activeRunId", "messageCount", "createdAt", "updatedAt"}


class TestCreate:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.post("/v1/threads", json={})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="threads.create", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.post("/v1/threads", headers=tenant.public, json={})
        assert_error(
            response, 403, "FORBIDDEN", operation_id="threads.create", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    @pytest.mark.parametrize(
        "body",
        [
            {"title": "x" * 257},
            {"metadata": {f"k{i}": "v" for i in range(17)}},
            {"metadata": {"k" * 65: "v"}},
            {"metadata": {"": "v"}},
            {"metadata": {"k": "v" * 513}},
            {"metadata": {"k": 1}},
            {"metadata": ["k"]},
            {"title": 5},
            {"color": "red"},
        ],
    )
    async def test_bad_input(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, object]
    ) -> None:
        response = await client.post("/v1/threads", headers=tenant.secret, json=body)
        assert_error(response, 400, "BAD_REQUEST", operation_id="threads.create", reason="VALIDATION_FAILED")

    async def test_success_and_limits_inclusive(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        metadata = {f"k{i:02d}" + "x" * 61: "v" * 512 for i in range(16)}
        thread = await new_thread(client, tenant, title="t" * 256, metadata=metadata)
        assert set(thread) == THREAD_FIELDS
        assert thread["title"] == "t" * 256 and thread["metadata"] == metadata
        assert thread["messageCount"] == 0 and thread["activeRunId"] is None
        assert str(thread["id"]).startswith("thr_") and thread["createdAt"] == thread["updatedAt"]

    async def test_empty_body_makes_an_untitled_thread(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await new_thread(client, tenant)
        assert thread["title"] is None and thread["metadata"] == {}

    async def test_concurrent_creates_are_each_committed_once_and_a_bad_one_fails_alone(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        """Concurrent creates are group-committed (kit.group_commit): each answer is a committed row."""
        bodies: list[dict[str, object]] = [{"title": f"t{i}", "metadata": {"n": str(i)}} for i in range(30)]
        bodies.insert(15, {"title": 5})
        responses = await asyncio.gather(
            *(client.post("/v1/threads", headers=tenant.secret, json=body) for body in bodies)
        )
        assert [r.status_code for r in responses].count(201) == 30
        assert_error(
            responses[15], 400, "BAD_REQUEST", operation_id="threads.create", reason="VALIDATION_FAILED"
        )
        created = [r.json() for r in responses if r.status_code == 201]
        async with services.db.transaction(write=False) as conn:
            for thread in created:
                stored = ThreadOut.of(await get_thread(conn, tenant.org_id, str(thread["id"])))
                assert stored.model_dump(mode="json", by_alias=True) == thread
        listed = (await client.get("/v1/threads?limit=100", headers=tenant.secret)).json()["data"]
        assert [t["id"] for t in listed] == sorted((t["id"] for t in created), reverse=True)


class TestList:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/threads")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="threads.list", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/threads", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="threads.list", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_newest_first_own_only_with_cursor(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        ids = [(await new_thread(client, tenant, title=f"t{i}"))["id"] for i in range(5)]
        await new_thread(client, other_tenant, title="theirs")
        first = (await client.get("/v1/threads?limit=3", headers=tenant.secret)).json()
        second = (
            await client.get(
                "/v1/threads", headers=tenant.secret, params={"limit": 3, "cursor": first["nextCursor"]}
            )
        ).json()
        assert [t["id"] for t in first["data"] + second["data"]] == list(reversed(ids))
        assert second["nextCursor"] is None

    @pytest.mark.parametrize("params", [{"limit": 2}, {"limit": 2, "metadata[team]": "core"}])
    async def test_body_is_the_models_serialization(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services, params: dict[str, object]
    ) -> None:
        """The list writes its body directly (threads.fast_list.page_json), unfiltered from the driver's
        values and filtered from SQLAlchemy's: both must be CursorPage[ThreadOut]'s bytes."""
        for i in range(3):
            await new_thread(
                client, tenant, title=None if i else 't\u00e9"', metadata={"team": "core", "i": str(i)}
            )
        response = await client.get("/v1/threads", headers=tenant.secret, params=params)
        assert response.headers["content-type"] == "application/json"
        body = response.json()
        async with services.db.transaction(write=False) as conn:
            threads = [ThreadOut.of(await get_thread(conn, tenant.org_id, t["id"])) for t in body["data"]]
        expected = CursorPage[ThreadOut](data=threads, next_cursor=body["nextCursor"])
        assert body["nextCursor"] is not None
        assert response.content == expected.model_dump_json().encode()

    async def test_metadata_filter(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        prod = await new_thread(client, tenant, metadata={"env": "prod", "team": "core"})
        await new_thread(client, tenant, metadata={"env": "staging", "team": "core"})
        await new_thread(client, tenant, metadata={"team": "core"})
        response = await client.get("/v1/threads", headers=tenant.secret, params={"metadata[env]": "prod"})
        assert [t["id"] for t in response.json()["data"]] == [prod["id"]]
        both = await client.get(
            "/v1/threads", headers=tenant.secret, params={"metadata[env]": "prod", "metadata[team]": "core"}
        )
        assert [t["id"] for t in both.json()["data"]] == [prod["id"]]
        none = await client.get(
            "/v1/threads", headers=tenant.secret, params={"metadata[env]": "prod", "metadata[team]": "web"}
        )
        assert none.json()["data"] == []
        odd_key = await client.get("/v1/threads", headers=tenant.secret, params={'metadata[a".b]': "x"})
        assert odd_key.status_code == 200 and odd_key.json()["data"] == []

    @pytest.mark.parametrize(
        "key", ['env","x', 'a"b', "a.b", "a[0]", "x]", "a\\b", "caf\u00e9", "tab\there", "it's", "$.env"]
    )
    async def test_metadata_filter_keys_of_any_characters(
        self, client: httpx.AsyncClient, tenant: Tenant, key: str
    ) -> None:
        """Every key a thread may hold can be filtered on: quotes, dots, brackets, backslashes and what JSON
        escapes are compared as keys, never read as a JSON path (``?metadata[env","x]=prod`` was a 500)."""
        wanted = await new_thread(client, tenant, metadata={key: "prod", "env": "prod"})
        await new_thread(client, tenant, metadata={key: "staging", "env": "prod"})
        found = await client.get("/v1/threads", headers=tenant.secret, params={f"metadata[{key}]": "prod"})
        assert found.status_code == 200, found.text
        assert [t["id"] for t in found.json()["data"]] == [wanted["id"]]

    async def test_bad_input(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for params, reason in (
            ({"limit": "0"}, "VALIDATION_FAILED"),
            ({"cursor": "nope"}, "INVALID_CURSOR"),
            ({"metadata[]": "x"}, "VALIDATION_FAILED"),
        ):
            response = await client.get("/v1/threads", headers=tenant.secret, params=params)
            assert_error(response, 400, "BAD_REQUEST", operation_id="threads.list", reason=reason)

    async def test_each_method_passes_the_middleware_once(
        self, client: httpx.AsyncClient, services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """GET (and HEAD) are answered before routing, POST through FastAPI: each request is still
        authenticated and counted once, whichever way it went (ThreadListEndpoint, assembly._App)."""
        answers = limiter_answers(services, monkeypatch)
        remaining = []
        for method in ("GET", "HEAD", "POST", "GET"):
            response = await client.request(method, "/v1/threads", headers=tenant.secret, json={})
            assert response.status_code == (201 if method == "POST" else 200), response.text
            assert response.headers["x-request-id"]
            remaining.append(int(response.headers["x-ratelimit-remaining"]))
        # One token each from the organization's bucket, and each response's headers are its answer
        # (not a countdown from 999: the bucket refills between requests a loaded machine makes slowly).
        assert [buckets for buckets, _ in answers] == [answers[0][0]] * 4 and len(answers[0][0]) == 1
        assert ":org" in answers[0][0][0].key
        assert remaining == [decision.remaining for _, decision in answers] and remaining[0] == 999

    async def test_head_answers_headers_without_a_body(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        await new_thread(client, tenant)
        got = await client.get("/v1/threads", headers=tenant.secret)
        head = await client.head("/v1/threads", headers=tenant.secret)
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["content-type"] == got.headers["content-type"] == "application/json"
        assert head.headers["content-length"] == got.headers["content-length"]


class TestGet:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/threads/thr_x")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="threads.get", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/threads/thr_x", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="threads.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_another_organizations_thread_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        theirs = await new_thread(client, other_tenant)
        response = await client.get(f"/v1/threads/{theirs['id']}", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="threads.get")

    async def test_success(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await new_thread(client, tenant, title="hello")
        response = await client.get(f"/v1/threads/{thread['id']}", headers=tenant.secret)
        assert response.status_code == 200 and response.json() == thread


class TestUpdate:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.patch("/v1/threads/thr_x", json={})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="threads.update", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.patch("/v1/threads/thr_x", headers=tenant.public, json={})
        assert_error(
            response, 403, "FORBIDDEN", operation_id="threads.update", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_another_organizations_thread_is_404_and_unchanged(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        theirs = await new_thread(client, other_tenant, title="keep")
        response = await client.patch(
            f"/v1/threads/{theirs['id']}", headers=tenant.secret, json={"title": "x"}
        )
        assert_error(response, 404, "NOT_FOUND", operation_id="threads.update")
        kept = await client.get(f"/v1/threads/{theirs['id']}", headers=other_tenant.secret)
        assert kept.json()["title"] == "keep"

    async def test_bad_input(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await new_thread(client, tenant)
        for body in ({"title": "x" * 257}, {"metadata": None}, {"metadata": {"k": 2}}, {"id": "thr_y"}):
            response = await client.patch(f"/v1/threads/{thread['id']}", headers=tenant.secret, json=body)
            assert_error(
                response, 400, "BAD_REQUEST", operation_id="threads.update", reason="VALIDATION_FAILED"
            )

    async def test_partial_update(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await new_thread(client, tenant, title="before", metadata={"a": "1"})
        url = f"/v1/threads/{thread['id']}"
        renamed = (await client.patch(url, headers=tenant.secret, json={"title": "after"})).json()
        assert renamed["title"] == "after" and renamed["metadata"] == {"a": "1"}
        assert renamed["updatedAt"] >= thread["updatedAt"]
        remapped = (await client.patch(url, headers=tenant.secret, json={"metadata": {"b": "2"}})).json()
        assert remapped["title"] == "after" and remapped["metadata"] == {"b": "2"}
        cleared = (await client.patch(url, headers=tenant.secret, json={"title": None})).json()
        assert cleared["title"] is None and cleared["metadata"] == {"b": "2"}


class TestDelete:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.delete("/v1/threads/thr_x")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="threads.delete", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.delete("/v1/threads/thr_x", headers=tenant.public)
        assert_error(
            response, 403, "FORBIDDEN", operation_id="threads.delete", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_another_organizations_thread_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        theirs = await new_thread(client, other_tenant)
        response = await client.delete(f"/v1/threads/{theirs['id']}", headers=tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="threads.delete")
        assert (
            await client.get(f"/v1/threads/{theirs['id']}", headers=other_tenant.secret)
        ).status_code == 200

    async def test_deletes_the_thread_and_its_messages(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await new_thread(client, tenant, title="doomed")
        url = f"/v1/threads/{thread['id']}"
        message = await client.post(
            f"{url}/messages", headers=tenant.secret, json={"content": "zebra crossing"}
        )
        assert message.status_code == 201
        deleted = await client.delete(url, headers=tenant.secret)
        assert deleted.status_code == 200 and deleted.json()["id"] == thread["id"]
        assert deleted.json()["messageCount"] == 1
        assert (await client.get(url, headers=tenant.secret)).status_code == 404
        gone = await client.get(f"{url}/messages/{message.json()['id']}", headers=tenant.secret)
        assert gone.status_code == 404
        found = await client.get("/v1/search/messages", headers=tenant.secret, params={"q": "zebra"})
        assert found.json()["pagination"]["totalResults"] == 0
        again = await client.delete(url, headers=tenant.secret)
        assert_error(again, 404, "NOT_FOUND", operation_id="threads.delete")
