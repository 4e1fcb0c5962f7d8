"""Ids made in bulk (``ids_after``, one per log record) are the ids ``_encode`` spells, one apart."""

from __future__ import annotations

import time

import pytest

from threadline.kit.ids import _decode, _encode, id_at, id_time_ms, ids_after, new_id


def _value(identifier: str) -> int:
    return _decode(identifier.split("_", 1)[1])


@pytest.mark.parametrize(
    ("tail", "count"),
    [
        (0, 1),
        (5, 1000),
        (1023, 2),  # across a run of 1,024 (the last pair of characters wraps)
        (1000, 3000),  # across several runs
        ((1 << 30) - 3, 10),  # across 2**30 (the fourth pair from the end changes too)
        ((1 << 80) - 2, 5),  # across the millisecond's random part: the time part counts on
    ],
)
def test_consecutive_after_the_last_id(tail: int, count: int) -> None:
    future_ms = time.time_ns() // 1_000_000 + 60_000  # later than now: the ids continue from it
    last = id_at("log", future_ms, tail)
    ids = ids_after("log", last, count)
    start = _value(last) + 1
    assert ids == [f"log_{_encode(start + n)}" for n in range(count)]
    assert sorted([last, *ids]) == [last, *ids]
    assert all(len(identifier) == len(last) for identifier in ids)


def test_a_past_last_id_starts_at_the_current_millisecond() -> None:
    before_ms = time.time_ns() // 1_000_000
    ids = ids_after("log", new_id("log"), 3)
    assert id_time_ms("log", ids[0]) >= before_ms
    assert [_value(i) for i in ids] == [_value(ids[0]) + n for n in range(3)]
