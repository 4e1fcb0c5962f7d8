"""The hour the hourly counts (``log_counts``, ``run_counts``) count a moment in: whole hours since the
epoch, UTC, as an integer, the same in Python and in the SQL of migration 0020 (which backfills them and
keeps ``run_counts`` by triggers). Imports nothing heavy: the log store process uses it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

HOUR = timedelta(hours=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def hour_of(moment: datetime) -> int:
    return int(moment.timestamp()) // 3600


def start_of(hour: int) -> datetime:
    return _EPOCH + HOUR * hour
