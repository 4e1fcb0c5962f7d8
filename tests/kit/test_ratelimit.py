"""Rate limits: the bucket arithmetic of both implementations, and what clients see over HTTP."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest
from redis.asyncio import Redis

from tests.conftest import REDIS_URL, require_distributed
from tests.support import Tenant, assert_error
from threadline.app import create_app
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.ratelimit import Bucket, MemoryRateLimiter, RateLimiter, RedisRateLimiter
from threadline.provisioning import set_rate_limit
from threadline.runtime import Services


@pytest.fixture(params=["memory", "redis"])
async def limiter(request: pytest.FixtureRequest) -> AsyncIterator[RateLimiter]:
    if request.param == "memory":
        yield MemoryRateLimiter(Clock())
        return
    await require_distributed()
    redis = Redis.from_url(REDIS_URL)
    prefix = f"tltest:limiter:{time.time_ns()}:"
    yield RedisRateLimiter(redis, prefix)
    keys = [k async for k in redis.scan_iter(match=prefix + "*")]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()


class TestBuckets:
    async def test_burst_up_to_the_limit_then_refusal(self, limiter: RateLimiter) -> None:
        buckets = (Bucket("org:a", 5), Bucket("key:a", 5))
        started = time.time()
        remaining = [(await limiter.hit(buckets)).remaining for _ in range(5)]
        assert remaining == [4, 3, 2, 1, 0]
        refused = await limiter.hit(buckets)
        assert not refused.allowed and refused.limit == 5 and refused.remaining == 0
        # One token refills in 60/5 = 12 s.
        assert 1 <= refused.retry_after <= 12
        assert started + 59 <= refused.reset_at <= time.time() + 61

    async def test_headers_describe_the_tighter_bucket(self, limiter: RateLimiter) -> None:
        decision = await limiter.hit((Bucket("org:b", 100), Bucket("key:b", 3)))
        assert (decision.limit, decision.remaining) == (3, 2)
        assert dict(decision.headers())[b"x-ratelimit-limit"] == b"3"

    async def test_a_refused_request_costs_no_bucket_anything(self, limiter: RateLimiter) -> None:
        for _ in range(2):
            assert (await limiter.hit((Bucket("org:c", 10), Bucket("key:c1", 2)))).allowed
        assert not (await limiter.hit((Bucket("org:c", 10), Bucket("key:c1", 2)))).allowed
        other = await limiter.hit((Bucket("org:c", 10), Bucket("key:c2", 10)))
        assert other.allowed and other.remaining == 7  # 10 - 2 successes - this one

    async def test_buckets_are_independent(self, limiter: RateLimiter) -> None:
        assert (await limiter.hit((Bucket("org:d", 1),))).allowed
        assert not (await limiter.hit((Bucket("org:d", 1),))).allowed
        assert (await limiter.hit((Bucket("org:e", 1),))).allowed


async def test_memory_refill_is_continuous(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_000_000.0]
    monkeypatch.setattr("threadline.kit.ratelimit.time.monotonic", lambda: now[0])
    limiter = MemoryRateLimiter(Clock())
    bucket = (Bucket("org:f", 60),)
    for _ in range(60):
        assert (await limiter.hit(bucket)).allowed
    assert not (await limiter.hit(bucket)).allowed
    now[0] += 1.0  # one token per second at 60/min
    assert (await limiter.hit(bucket)).allowed
    assert not (await limiter.hit(bucket)).allowed
    now[0] += 120
    assert (await limiter.hit(bucket)).remaining == 59  # refilled to capacity, never above


async def test_memory_limiter_ignores_wall_clock_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = [2_000_000.0]
    monkeypatch.setattr("threadline.kit.ratelimit.time.time", lambda: wall[0])
    limiter = MemoryRateLimiter(Clock())
    assert (await limiter.hit((Bucket("org:g", 1),))).allowed
    wall[0] -= 3600  # the wall clock is stepped back an hour
    refused = await limiter.hit((Bucket("org:g", 1),))
    assert not refused.allowed and refused.retry_after <= 60


async def test_a_lowered_limit_applies_at_once() -> None:
    limiter = MemoryRateLimiter(Clock())
    assert (await limiter.hit((Bucket("org:h", 100),))).remaining == 99
    lowered = await limiter.hit((Bucket("org:h", 5),))
    assert (lowered.limit, lowered.remaining) == (5, 4)


class TestOverHttp:
    async def test_headers_on_success(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        first = await client.get("/v1/me", headers=tenant.secret)
        second = await client.get("/v1/me", headers=tenant.secret)
        assert first.headers["x-ratelimit-limit"] == "1000"
        assert int(first.headers["x-ratelimit-remaining"]) == 999
        assert int(second.headers["x-ratelimit-remaining"]) == 998
        assert abs(int(first.headers["x-ratelimit-reset"]) - time.time()) < 5

    async def test_429_carries_both_envelopes(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        async with services.db.transaction() as conn:
            await set_rate_limit(conn, services.signals, tenant.org_id, 3, now=services.clock.now())
        for expected in (2, 1, 0):
            response = await client.get("/v1/projects", headers=tenant.secret)
            assert response.status_code == 200
            assert response.headers["x-ratelimit-limit"] == "3"
            assert response.headers["x-ratelimit-remaining"] == str(expected)
        refused = await client.get("/v1/projects", headers=tenant.secret)
        body = assert_error(refused, 429, "TOO_MANY_REQUESTS", operation_id="projects.list")
        retry = int(refused.headers["retry-after"])
        assert 1 <= retry <= 20
        assert body["retryAfterSeconds"] == retry
        assert body["data"] is None
        assert body["error"] == {
            "code": "RATE_LIMIT_EXCEEDED",
            "message": f"Rate limit exceeded. Retry after {retry} seconds.",
        }
        assert refused.headers["x-ratelimit-remaining"] == "0"
        assert refused.headers["x-ratelimit-limit"] == "3"

    async def test_organization_limit_changes_take_effect_at_once(
        self, client: httpx.AsyncClient, tenant: Tenant, services: Services
    ) -> None:
        assert (await client.get("/v1/me", headers=tenant.secret)).headers["x-ratelimit-limit"] == "1000"
        async with services.db.transaction() as conn:
            await set_rate_limit(conn, services.signals, tenant.org_id, 50_000, now=services.clock.now())
        response = await client.get("/v1/me", headers=tenant.secret)
        assert response.headers["x-ratelimit-limit"] == "50000"
        assert response.json()["organization"]["rateLimit"] == {"requestsPerMinute": 50_000}

    async def test_a_key_can_have_a_tighter_budget(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        body = {"name": "cron", "type": "secret", "rateLimitPerMinute": 2}
        value = (await client.post("/v1/keys", headers=tenant.secret, json=body)).json()["key"]
        tight = {"Authorization": f"Bearer {value}"}
        assert [(await client.get("/v1/me", headers=tight)).status_code for _ in range(3)] == [200, 200, 429]
        assert (await client.get("/v1/me", headers=tenant.secret)).status_code == 200

    async def test_organizations_do_not_share_budgets(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, services: Services
    ) -> None:
        async with services.db.transaction() as conn:
            await set_rate_limit(conn, services.signals, tenant.org_id, 1, now=services.clock.now())
        assert (await client.get("/v1/me", headers=tenant.secret)).status_code == 200
        assert (await client.get("/v1/me", headers=tenant.secret)).status_code == 429
        assert (await client.get("/v1/me", headers=other_tenant.secret)).status_code == 200

    async def test_unauthenticated_requests_are_limited_per_address(self, settings: Settings) -> None:
        app = create_app(settings.model_copy(update={"default_rate_limit_per_minute": 5}), chores=False)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                statuses = [(await http.get("/v1/me")).status_code for _ in range(6)]
                contract = await http.get("/v1/openapi.json")
        assert statuses == [401] * 5 + [429]
        assert contract.status_code == 429  # public documents draw from the same per-address bucket
