"""Token buckets: one interface, an in-process implementation and a Redis one.

A bucket holds up to ``limit`` tokens (the per-minute limit, so a full minute's budget may arrive as a
burst) and refills continuously at ``limit / 60`` tokens per second. A request takes one token from every
bucket it names (organization and key) or from none: a request refused by one bucket costs nothing in the
other. The headers describe the tighter bucket. The Redis implementation runs the whole check as one
script on the server's clock, so any number of API processes share one budget and never race.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from redis.asyncio import Redis

from threadline.kit.clock import Clock


@dataclass(frozen=True, slots=True)
class Bucket:
    key: str
    limit: int


class Decision(NamedTuple):
    """A tuple rather than a frozen dataclass: one is made per request, and tuples are cheaper to build."""

    allowed: bool
    limit: int
    remaining: int
    reset_at: int
    retry_after: int

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"x-ratelimit-limit", b"%d" % self.limit),
            (b"x-ratelimit-remaining", b"%d" % self.remaining),
            (b"x-ratelimit-reset", b"%d" % self.reset_at),
        ]


class RateLimiter(Protocol):
    async def hit(self, buckets: Sequence[Bucket]) -> Decision: ...

    async def aclose(self) -> None: ...


class MemoryRateLimiter:
    """For one process (the embedded shape). Idle full buckets are swept so memory stays bounded.

    Runs on every request, so it is written as one pass with mutable state rather than as a pipeline of
    small helpers; the Lua script below is the same arithmetic, line for line."""

    _SWEEP_EVERY = 10_000

    def __init__(self, clock: Clock) -> None:
        self._clock = clock  # dates X-RateLimit-Reset
        self._buckets: dict[str, list[float]] = {}
        self._hits = 0

    async def hit(self, buckets: Sequence[Bucket]) -> Decision:
        # Refill runs on the monotonic clock (a wall-clock step must not freeze or flood a bucket);
        # the services' clock only dates X-RateLimit-Reset.
        now = time.monotonic()
        self._hits += 1
        if self._hits % self._SWEEP_EVERY == 0:
            self._sweep(now)
        if len(buckets) == 1:
            return self._hit_one(buckets[0], now)
        states = [self._refilled(bucket, now) for bucket in buckets]
        allowed = all(state[0] >= 1 for state in states)
        retry_after = 0.0
        tight = 0
        for i, state in enumerate(states):
            limit = buckets[i].limit
            if allowed:
                state[0] -= 1
            elif state[0] < 1:
                retry_after = max(retry_after, (1 - state[0]) * 60 / limit)
            if i and (
                (floor := math.floor(state[0])) < (tight_floor := math.floor(states[tight][0]))
                or (floor == tight_floor and limit < buckets[tight].limit)
            ):
                tight = i
        level, limit = states[tight][0], buckets[tight].limit
        return Decision(
            allowed=allowed,
            limit=limit,
            remaining=max(0, math.floor(level)),
            reset_at=math.ceil(self._clock.timestamp() + (limit - level) * 60 / limit),
            retry_after=math.ceil(retry_after),
        )

    def _hit_one(self, bucket: Bucket, now: float) -> Decision:
        """The common case (an organization bucket alone), without the bookkeeping for several."""
        state = self._refilled(bucket, now)
        limit = bucket.limit
        allowed = state[0] >= 1
        if allowed:
            state[0] -= 1
        level = state[0]
        retry_after = 0 if allowed else math.ceil((1 - level) * 60 / limit)
        return Decision(
            allowed,
            limit,
            max(0, math.floor(level)),
            math.ceil(self._clock.timestamp() + (limit - level) * 60 / limit),
            retry_after,
        )

    def _refilled(self, bucket: Bucket, now: float) -> list[float]:
        state = self._buckets.get(bucket.key)
        if state is None:
            state = self._buckets[bucket.key] = [float(bucket.limit), now]
        else:  # clamped even when no time passed: a lowered limit applies at once
            state[0] = min(float(bucket.limit), state[0] + (now - state[1]) * bucket.limit / 60)
            state[1] = now
        return state

    def _sweep(self, now: float) -> None:
        # A bucket untouched for over a minute is full again whatever its limit; forgetting it is exact.
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60}

    async def aclose(self) -> None:
        self._buckets.clear()


# KEYS: bucket keys. ARGV: one limit per key. Returns {allowed, limit, remaining, reset_ms, retry_ms}.
_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS
local tokens = {}
local allowed = 1
for i = 1, n do
  local cap = tonumber(ARGV[i])
  local v = redis.call('HMGET', KEYS[i], 't', 'ts')
  local level = tonumber(v[1])
  local stamp = tonumber(v[2])
  if level == nil or stamp == nil then level = cap; stamp = now end
  level = math.min(cap, level + math.max(0, now - stamp) * cap / 60000)
  tokens[i] = level
  if level < 1 then allowed = 0 end
end
local retry = 0
local tight = 1
for i = 1, n do
  local cap = tonumber(ARGV[i])
  if allowed == 1 then tokens[i] = tokens[i] - 1 end
  redis.call('HSET', KEYS[i], 't', tostring(tokens[i]), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.ceil((cap - tokens[i]) * 60000 / cap) + 1000)
  if allowed == 0 and tokens[i] < 1 then
    retry = math.max(retry, math.ceil((1 - tokens[i]) * 60000 / cap))
  end
  local ft, fb = math.floor(tokens[i]), math.floor(tokens[tight])
  if ft < fb or (ft == fb and cap < tonumber(ARGV[tight])) then tight = i end
end
local cap = tonumber(ARGV[tight])
local reset = now + math.ceil((cap - tokens[tight]) * 60000 / cap)
return {allowed, cap, math.max(0, math.floor(tokens[tight])), reset, retry}
"""


class RedisRateLimiter:
    """Shared by every process pointed at the same Redis and prefix; one script call per check."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix + "rl:"
        self._script = redis.register_script(_LUA)

    async def hit(self, buckets: Sequence[Bucket]) -> Decision:
        keys = [self._prefix + b.key for b in buckets]
        allowed, limit, remaining, reset_ms, retry_ms = await self._script(
            keys=keys, args=[b.limit for b in buckets]
        )
        return Decision(
            allowed=bool(allowed),
            limit=int(limit),
            remaining=int(remaining),
            reset_at=math.ceil(int(reset_ms) / 1000),
            retry_after=math.ceil(int(retry_ms) / 1000),
        )

    async def aclose(self) -> None:
        """The Redis connection belongs to the caller."""
