"""Stream tokens (issue 24): minting, and every rule of a ``?token=`` stream, on both shapes: exactly the
stream it was made for, expiry at open, the minting key's revocation and limits, origins and CORS."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.runs.helpers import DONE, parse_sse, read_stream, start_run, types, wait_for_status
from tests.support import Tenant, assert_error, make_thread
from threadline.keys.tables import stream_tokens
from threadline.kit.clock import ManualClock
from threadline.runtime import Services

ORIGIN = "https://app.example"
OTHER_ORIGIN = "https://evil.example"
SHORT = "#notools #chunks=5"


async def mint(
    client: httpx.AsyncClient, tenant: Tenant, kind: str, stream_id: str, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/v1/{kind}/{stream_id}/stream-tokens", headers=tenant.secret, json=body)
    assert response.status_code == 201, response.text
    minted: dict[str, Any] = response.json()
    return minted


async def finished_run(client: httpx.AsyncClient, tenant: Tenant) -> dict[str, Any]:
    thread = await make_thread(client, tenant)
    run = await start_run(client, tenant, thread, input=SHORT)
    return await wait_for_status(client, tenant, run["id"], "completed")


async def open_with(client: httpx.AsyncClient, path: str, token: str, **headers: str) -> httpx.Response:
    return await client.get(path, params={"token": token}, headers=headers, timeout=30)


@pytest.fixture
async def restricted(client: httpx.AsyncClient, tenant: Tenant) -> Tenant:
    """``tenant`` whose allowedOrigins are ``ORIGIN`` and a second one, not ``OTHER_ORIGIN``."""
    origins = [ORIGIN, "http://localhost:3000"]
    response = await client.patch("/v1/settings", headers=tenant.secret, json={"allowedOrigins": origins})
    assert response.status_code == 200, response.text
    return tenant


class TestMinting:
    async def test_a_run_token_is_shown_once_and_stored_as_a_hash(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        run = await finished_run(client, tenant)
        response = await client.post(f"/v1/runs/{run['id']}/stream-tokens", headers=tenant.secret)
        assert response.status_code == 201, response.text
        minted = response.json()
        assert set(minted) == {"token", "expiresAt", "runId"} and minted["runId"] == run["id"]
        assert minted["token"].startswith("st_") and len(minted["token"]) == 43
        expires = datetime.fromisoformat(minted["expiresAt"].replace("Z", "+00:00"))
        assert minted["expiresAt"].endswith("Z")
        assert abs(expires - datetime.now(UTC) - timedelta(seconds=600)) < timedelta(seconds=5)
        async with services.db.transaction(write=False) as conn:
            rows = (await conn.execute(sa.select(stream_tokens))).mappings().all()
        assert [row["token_hash"] for row in rows] == [hashlib.sha256(minted["token"].encode()).hexdigest()]
        assert minted["token"] not in repr([dict(row) for row in rows])
        assert rows[0]["key_id"] == tenant.created.secret_key.id

    async def test_a_thread_token_names_its_thread(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        minted = await mint(client, tenant, "threads", thread, ttlSeconds=30, origins=["https://a.example"])
        assert set(minted) == {"token", "expiresAt", "threadId"} and minted["threadId"] == thread
        expires = datetime.fromisoformat(minted["expiresAt"].replace("Z", "+00:00"))
        assert abs(expires - datetime.now(UTC) - timedelta(seconds=30)) < timedelta(seconds=5)

    @pytest.mark.parametrize("body", [{"ttlSeconds": 0}, {"ttlSeconds": 3601}, {"ttlSeconds": "60"}])
    async def test_ttl_is_1_to_3600_seconds(
        self, client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]
    ) -> None:
        thread = await make_thread(client, tenant)
        response = await client.post(f"/v1/threads/{thread}/stream-tokens", headers=tenant.secret, json=body)
        assert_error(
            response, 400, "BAD_REQUEST", operation_id="threads.createStreamToken", reason="VALIDATION_FAILED"
        )
        assert "ttlSeconds" in response.text

    async def test_origins_must_be_allowed_by_the_organization(
        self, client: httpx.AsyncClient, restricted: Tenant
    ) -> None:
        run = await finished_run(client, restricted)
        response = await client.post(
            f"/v1/runs/{run['id']}/stream-tokens",
            headers=restricted.secret,
            json={"origins": [ORIGIN, OTHER_ORIGIN]},
        )
        body = assert_error(
            response,
            400,
            "BAD_REQUEST",
            operation_id="runs.createStreamToken",
            reason="ORIGIN_NOT_ALLOWED",
            missing=["origins[1]"],
        )
        assert OTHER_ORIGIN in str(body["message"])
        for origins in (["*"], ["not an origin"], []):
            response = await client.post(
                f"/v1/runs/{run['id']}/stream-tokens", headers=restricted.secret, json={"origins": origins}
            )
            assert response.status_code == 400, origins

    async def test_unknown_and_foreign_streams_are_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        run = await finished_run(client, other_tenant)
        for path, operation in (
            (f"/v1/runs/{run['id']}/stream-tokens", "runs.createStreamToken"),
            ("/v1/runs/run_missing/stream-tokens", "runs.createStreamToken"),
            (f"/v1/threads/{run['threadId']}/stream-tokens", "threads.createStreamToken"),
        ):
            response = await client.post(path, headers=tenant.secret)
            assert_error(response, 404, "NOT_FOUND", operation_id=operation)

    async def test_a_token_cannot_mint_tokens(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        response = await client.post(f"/v1/runs/{run['id']}/stream-tokens", params={"token": token})
        assert_error(
            response, 401, "UNAUTHORIZED", operation_id="runs.createStreamToken", missing=["Authorization"]
        )


class TestReading:
    async def test_a_run_token_reads_what_the_key_reads(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        run = await finished_run(client, tenant)
        path = f"/v1/runs/{run['id']}/stream"
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        with_key = await read_stream(client, tenant, path)
        response = await open_with(client, path, token)
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "text/event-stream"
        )
        assert parse_sse(response.text) == with_key and with_key[-1] == DONE

    async def test_cursor_and_last_event_id_resume(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        path = f"/v1/runs/{run['id']}/stream"
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        whole = parse_sse((await open_with(client, path, token)).text)
        middle = whole[3]["cursor"]
        by_query = await client.get(path, params={"token": token, "cursor": middle})
        by_header = await open_with(client, path, token, **{"Last-Event-ID": middle})
        assert parse_sse(by_query.text) == whole[4:] == parse_sse(by_header.text)

    async def test_a_live_run_streams_to_done(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#notools #chunks=30 #delay=20")
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        events = parse_sse((await open_with(client, f"/v1/runs/{run['id']}/stream", token)).text)
        assert types(events)[0] == "run_started" and types(events)[-2:] == ["run_completed", DONE]
        assert len([e for e in events if e != DONE and e["type"] == "text_chunk"]) == 30

    async def test_a_thread_token_follows_the_threads_runs(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        token = (await mint(client, tenant, "threads", thread))["token"]
        path = f"/v1/threads/{thread}/stream"
        assert parse_sse((await open_with(client, path, token)).text) == [DONE]  # no run yet
        first = await start_run(client, tenant, thread, input=SHORT)
        events = parse_sse((await open_with(client, path, token)).text)
        assert {e["runId"] for e in events[:-1]} == {first["id"]} and events[-1] == DONE
        await wait_for_status(client, tenant, first["id"], "completed")
        second = await start_run(client, tenant, thread, input=SHORT)
        events = parse_sse((await open_with(client, path, token)).text)
        assert {e["runId"] for e in events[:-1]} == {second["id"]}
        # A cursor of the first run still resumes it: the thread's runs are the token's.
        resumed = await client.get(path, params={"token": token, "cursor": f"{first['id']}.1"})
        assert {e["runId"] for e in parse_sse(resumed.text)[:-1]} == {first["id"]}

    async def test_a_run_tokens_cursor_of_another_run_is_400(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        run, other = await finished_run(client, tenant), await finished_run(client, tenant)
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        response = await client.get(
            f"/v1/runs/{run['id']}/stream", params={"token": token, "cursor": f"{other['id']}.1"}
        )
        assert_error(response, 400, "BAD_REQUEST", operation_id="runs.stream", reason="INVALID_CURSOR")


class TestRefusals:
    async def test_another_run_or_thread_is_404(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        run, other = await finished_run(client, tenant), await finished_run(client, tenant)
        foreign = await finished_run(client, other_tenant)
        run_token = (await mint(client, tenant, "runs", run["id"]))["token"]
        thread_token = (await mint(client, tenant, "threads", run["threadId"]))["token"]
        for path, token, operation in (
            (f"/v1/runs/{other['id']}/stream", run_token, "runs.stream"),
            (f"/v1/runs/{foreign['id']}/stream", run_token, "runs.stream"),
            (f"/v1/threads/{run['threadId']}/stream", run_token, "threads.stream"),
            (f"/v1/threads/{other['threadId']}/stream", thread_token, "threads.stream"),
            (f"/v1/runs/{run['id']}/stream", thread_token, "runs.stream"),
        ):
            assert_error(await open_with(client, path, token), 404, "NOT_FOUND", operation_id=operation)

    async def test_any_other_endpoint_is_401(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        for path, operation in (
            (f"/v1/runs/{run['id']}", "runs.get"),
            (f"/v1/runs/{run['id']}/artifacts", "artifacts.list"),
            (f"/v1/threads/{run['threadId']}", "threads.get"),
            ("/v1/threads", "threads.list"),
            ("/v1/me", "me.get"),
        ):
            response = await open_with(client, path, token)
            assert_error(response, 401, "UNAUTHORIZED", operation_id=operation, missing=["Authorization"])
        cancel = await client.post(f"/v1/runs/{run['id']}/cancel", params={"token": token})
        assert cancel.status_code == 401

    async def test_a_token_in_a_header_is_401(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        path = f"/v1/runs/{run['id']}/stream"
        for headers in ({"Authorization": f"Bearer {token}"}, {"x-service-secret-key": token}):
            response = await client.get(path, headers=headers)
            assert_error(response, 401, "UNAUTHORIZED", operation_id="runs.stream", reason="INVALID_KEY")

    async def test_an_unknown_token_is_401(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        for token in ("st_" + "x" * 40, "nope", ""):
            response = await open_with(client, f"/v1/runs/{run['id']}/stream", token)
            assert response.status_code == 401, token

    async def test_expired_at_open_is_401_token_expired(
        self,
        client: httpx.AsyncClient,
        tenant: Tenant,
        services: Services,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        clock = ManualClock(datetime.now(UTC))
        monkeypatch.setattr(services, "clock", clock)  # the services' clock: minting and the check read it
        run = await finished_run(client, tenant)
        token = (await mint(client, tenant, "runs", run["id"], ttlSeconds=1))["token"]
        clock.advance(0.999)
        assert (await open_with(client, f"/v1/runs/{run['id']}/stream", token)).status_code == 200
        clock.advance(0.001)
        response = await open_with(client, f"/v1/runs/{run['id']}/stream", token)
        assert_error(response, 401, "UNAUTHORIZED", operation_id="runs.stream", reason="TOKEN_EXPIRED")

    async def test_a_stream_opened_before_expiry_runs_to_done(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = await make_thread(client, tenant)
        run = await start_run(client, tenant, thread, input="#notools #chunks=40 #delay=50")
        token = (await mint(client, tenant, "runs", run["id"], ttlSeconds=1))["token"]
        started = asyncio.get_running_loop().time()
        response = await open_with(client, f"/v1/runs/{run['id']}/stream", token)
        assert asyncio.get_running_loop().time() - started > 1.5  # outlived its token
        assert types(parse_sse(response.text))[-2:] == ["run_completed", DONE]

    async def test_the_minting_keys_revocation_refuses_the_token(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        spare = await client.post(
            "/v1/keys", headers=tenant.secret, json={"name": "server", "type": "secret"}
        )
        key = {"Authorization": f"Bearer {spare.json()['key']}"}
        run = await finished_run(client, tenant)
        minted = await client.post(f"/v1/runs/{run['id']}/stream-tokens", headers=key)
        token, path = minted.json()["token"], f"/v1/runs/{run['id']}/stream"
        assert (await open_with(client, path, token)).status_code == 200
        revoked = await client.delete(f"/v1/keys/{spare.json()['id']}", headers=tenant.secret)
        assert revoked.status_code == 200
        deadline = asyncio.get_running_loop().time() + 1.0
        while (response := await open_with(client, path, token)).status_code == 200:
            assert asyncio.get_running_loop().time() < deadline, "token still accepted 1 s after revocation"
            await asyncio.sleep(0.05)
        assert_error(response, 401, "UNAUTHORIZED", operation_id="runs.stream", reason="KEY_REVOKED")

    async def test_the_minting_keys_rate_limit_applies(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        run = await finished_run(client, tenant)
        spare = await client.post(
            "/v1/keys",
            headers=tenant.secret,
            json={"name": "limited", "type": "secret", "rateLimitPerMinute": 3},
        )
        key = {"Authorization": f"Bearer {spare.json()['key']}"}
        token = (await client.post(f"/v1/runs/{run['id']}/stream-tokens", headers=key)).json()["token"]
        path = f"/v1/runs/{run['id']}/stream"
        answers = [await open_with(client, path, token) for _ in range(3)]
        assert [r.status_code for r in answers] == [200, 200, 429]
        assert [r.headers["x-ratelimit-limit"] for r in answers] == ["3", "3", "3"]
        assert answers[2].json()["code"] == "TOO_MANY_REQUESTS" and "retry-after" in answers[2].headers


class TestCors:
    async def test_an_allowed_origin_is_named_and_limits_exposed(
        self, client: httpx.AsyncClient, restricted: Tenant
    ) -> None:
        run = await finished_run(client, restricted)
        token = (await mint(client, restricted, "runs", run["id"]))["token"]
        response = await open_with(client, f"/v1/runs/{run['id']}/stream", token, origin=ORIGIN)
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == ORIGIN
        assert "Origin" in response.headers["vary"]
        exposed = response.headers["access-control-expose-headers"]
        assert {"x-ratelimit-remaining", "x-ratelimit-limit", "retry-after"} <= set(exposed.split(", "))

    async def test_an_origin_the_token_does_not_allow_is_403(
        self, client: httpx.AsyncClient, restricted: Tenant
    ) -> None:
        thread = await make_thread(client, restricted)
        defaulted = (await mint(client, restricted, "threads", thread))["token"]
        narrowed = (await mint(client, restricted, "threads", thread, origins=[ORIGIN]))["token"]
        path = f"/v1/threads/{thread}/stream"
        for token, origin in ((defaulted, OTHER_ORIGIN), (narrowed, "http://localhost:3000")):
            response = await open_with(client, path, token, origin=origin)
            assert_error(
                response, 403, "FORBIDDEN", operation_id="threads.stream", reason="ORIGIN_NOT_ALLOWED"
            )
            assert "access-control-allow-origin" not in response.headers
        ok = await open_with(client, path, narrowed, origin=ORIGIN.upper().replace("HTTPS", "https"))
        assert ok.status_code == 200

    async def test_refusals_before_the_token_is_known_echo_the_origin(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        run = await finished_run(client, tenant)
        response = await open_with(client, f"/v1/runs/{run['id']}/stream", "st_" + "x" * 40, origin=ORIGIN)
        assert response.status_code == 401 and response.headers["access-control-allow-origin"] == ORIGIN

    async def test_a_preflight_is_answered(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        token = (await mint(client, tenant, "runs", run["id"]))["token"]
        response = await client.options(
            f"/v1/runs/{run['id']}/stream",
            params={"token": token},
            headers={
                "origin": ORIGIN,
                "access-control-request-method": "GET",
                "access-control-request-headers": "last-event-id",
            },
        )
        assert response.status_code == 204 and response.headers["access-control-allow-origin"] == ORIGIN
        assert "last-event-id" in response.headers["access-control-allow-headers"]

    async def test_secret_key_requests_are_unchanged(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        run = await finished_run(client, tenant)
        response = await client.get(
            f"/v1/runs/{run['id']}/stream", headers={**tenant.secret, "origin": ORIGIN}
        )
        assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
