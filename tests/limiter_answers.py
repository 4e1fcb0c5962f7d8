"""The rate limiter's own answers during a test, to compare a response's ``X-RateLimit-*`` headers with.

Tests that counted down from 999 held only while their requests came quickly: a bucket refills at its
limit per minute (1000/60 tokens a second), so on a loaded machine two slow requests read the same count.
What they mean to check (which bucket a request drew on, how many times, and that its headers are that
bucket's answer) is read from the limiter instead."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from threadline.kit.ratelimit import Bucket, Decision
from threadline.runtime import Services

Answer = tuple[tuple[Bucket, ...], Decision]


def limiter_answers(services: Services, monkeypatch: pytest.MonkeyPatch) -> list[Answer]:
    """Every answer the services' limiter gives from now on (the test's end undoes it), with the buckets
    it was asked about."""
    answers: list[Answer] = []
    hit = services.limiter.hit

    async def answered(buckets: Sequence[Bucket]) -> Decision:
        decision = await hit(buckets)
        answers.append((tuple(buckets), decision))
        return decision

    monkeypatch.setattr(services.limiter, "hit", answered)
    return answers
