"""Messages, one class per operation."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support import Tenant, assert_error, new_thread

MESSAGE_FIELDS = {"id", "threadId", "runId", "role", "content", "metadata", "createdAt"}


@pytest.fixture
async def thread(client: httpx.AsyncClient, tenant: Tenant) -> dict[str, object]:
    return await new_thread(client, tenant, title="support")


class TestCreate:
    async def test_requires_a_key(self, client: httpx.AsyncClient, thread: dict[str, object]) -> None:
        response = await client.post(f"/v1/threads/{thread['id']}/messages", json={"content": "hi"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="messages.create", missing=["Authorization"])

    async def test_refuses_a_public_key(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        response = await client.post(
            f"/v1/threads/{thread['id']}/messages", headers=tenant.public, json={"content": "hi"}
        )
        assert_error(
            response, 403, "FORBIDDEN", operation_id="messages.create", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_another_organizations_thread_is_404(
        self, client: httpx.AsyncClient, other_tenant: Tenant, thread: dict[str, object]
    ) -> None:
        response = await client.post(
            f"/v1/threads/{thread['id']}/messages", headers=other_tenant.secret, json={"content": "hi"}
        )
        assert_error(response, 404, "NOT_FOUND", operation_id="messages.create")

    @pytest.mark.parametrize(
        "body",
        [{}, {"content": 5}, {"content": "x", "role": "robot"}, {"content": "x", "metadata": {"k": ["v"]}}],
    )
    async def test_bad_input(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object], body: dict[str, object]
    ) -> None:
        response = await client.post(f"/v1/threads/{thread['id']}/messages", headers=tenant.secret, json=body)
        assert_error(
            response,
            400,
            "BAD_REQUEST",
            operation_id="messages.create",
            reason="VALIDATION_FAILED",
            missing=["content"] if body == {} else [],
        )

    async def test_content_limit_is_256_kib_of_utf8(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        url = f"/v1/threads/{thread['id']}/messages"
        exact = "é" * (128 * 1024)  # 2 bytes each: exactly 256 KiB
        assert (await client.post(url, headers=tenant.secret, json={"content": exact})).status_code == 201
        over = await client.post(url, headers=tenant.secret, json={"content": exact + "x"})
        body = assert_error(
            over, 400, "BAD_REQUEST", operation_id="messages.create", reason="VALIDATION_FAILED"
        )
        assert "content" in str(body["message"])

    async def test_success_updates_the_thread(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        url = f"/v1/threads/{thread['id']}/messages"
        response = await client.post(
            url, headers=tenant.secret, json={"role": "system", "content": "be brief", "metadata": {"k": "v"}}
        )
        assert response.status_code == 201
        message = response.json()
        assert set(message) == MESSAGE_FIELDS
        assert message["threadId"] == thread["id"] and message["runId"] is None
        assert message["role"] == "system" and message["metadata"] == {"k": "v"}
        assert str(message["id"]).startswith("msg_")
        after = (await client.get(f"/v1/threads/{thread['id']}", headers=tenant.secret)).json()
        assert after["messageCount"] == 1 and after["updatedAt"] == message["createdAt"]
        default_role = await client.post(url, headers=tenant.secret, json={"content": "hi"})
        assert default_role.json()["role"] == "user"

    async def test_count_is_right_under_concurrent_writes(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        url = f"/v1/threads/{thread['id']}/messages"
        responses = await asyncio.gather(
            *(client.post(url, headers=tenant.secret, json={"content": f"m{i}"}) for i in range(40))
        )
        assert [r.status_code for r in responses] == [201] * 40
        after = (await client.get(f"/v1/threads/{thread['id']}", headers=tenant.secret)).json()
        assert after["messageCount"] == 40
        assert after["updatedAt"] == max(r.json()["createdAt"] for r in responses)


class TestList:
    async def test_requires_a_key(self, client: httpx.AsyncClient, thread: dict[str, object]) -> None:
        response = await client.get(f"/v1/threads/{thread['id']}/messages")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="messages.list", missing=["Authorization"])

    async def test_refuses_a_public_key(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        response = await client.get(f"/v1/threads/{thread['id']}/messages", headers=tenant.public)
        assert_error(
            response, 403, "FORBIDDEN", operation_id="messages.list", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_another_organizations_thread_is_404(
        self, client: httpx.AsyncClient, other_tenant: Tenant, thread: dict[str, object]
    ) -> None:
        response = await client.get(f"/v1/threads/{thread['id']}/messages", headers=other_tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="messages.list")

    async def test_bad_input(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        response = await client.get(f"/v1/threads/{thread['id']}/messages?cursor=zz", headers=tenant.secret)
        assert_error(response, 400, "BAD_REQUEST", operation_id="messages.list", reason="INVALID_CURSOR")

    async def test_oldest_first_with_cursor(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        url = f"/v1/threads/{thread['id']}/messages"
        ids = []
        for i in range(5):
            ids.append(
                (await client.post(url, headers=tenant.secret, json={"content": f"m{i}"})).json()["id"]
            )
        first = (await client.get(url, headers=tenant.secret, params={"limit": 2})).json()
        seen = [m["id"] for m in first["data"]]
        cursor = first["nextCursor"]
        while cursor:
            page = (
                await client.get(url, headers=tenant.secret, params={"limit": 2, "cursor": cursor})
            ).json()
            seen.extend(m["id"] for m in page["data"])
            cursor = page["nextCursor"]
        assert seen == ids


class TestGet:
    async def test_requires_a_key(self, client: httpx.AsyncClient, thread: dict[str, object]) -> None:
        response = await client.get(f"/v1/threads/{thread['id']}/messages/msg_x")
        assert_error(response, 401, "UNAUTHORIZED", operation_id="messages.get", missing=["Authorization"])

    async def test_refuses_a_public_key(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        response = await client.get(f"/v1/threads/{thread['id']}/messages/msg_x", headers=tenant.public)
        assert_error(response, 403, "FORBIDDEN", operation_id="messages.get", reason="PUBLIC_KEY_NOT_ALLOWED")

    async def test_other_organization_or_other_thread_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, thread: dict[str, object]
    ) -> None:
        url = f"/v1/threads/{thread['id']}/messages"
        message = (await client.post(url, headers=tenant.secret, json={"content": "secret"})).json()
        response = await client.get(f"{url}/{message['id']}", headers=other_tenant.secret)
        assert_error(response, 404, "NOT_FOUND", operation_id="messages.get")
        elsewhere = await new_thread(client, tenant)
        wrong_thread = await client.get(
            f"/v1/threads/{elsewhere['id']}/messages/{message['id']}", headers=tenant.secret
        )
        assert_error(wrong_thread, 404, "NOT_FOUND", operation_id="messages.get")

    async def test_success(
        self, client: httpx.AsyncClient, tenant: Tenant, thread: dict[str, object]
    ) -> None:
        url = f"/v1/threads/{thread['id']}/messages"
        message = (await client.post(url, headers=tenant.secret, json={"content": "hello"})).json()
        response = await client.get(f"{url}/{message['id']}", headers=tenant.secret)
        assert response.status_code == 200 and response.json() == message
