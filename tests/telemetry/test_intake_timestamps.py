"""Intake records' levels and timestamps: normalised, defaulted to the time of receipt, refused when
unreadable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.support import Tenant, assert_error, listed
from tests.telemetry.intake_helpers import otlp_json, parse_time, stored_count
from threadline.runtime import Services


async def test_levels_are_normalised(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Loggers' level names are mapped to ours, case- and space-insensitively; no level is info."""
    sent = ["WARNING", " Error ", "critical", "notice", "verbose", "TRACE", None]
    body = [
        {"message": str(i), **({} if level is None else {"level": level})} for i, level in enumerate(sent)
    ]
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    assert response.status_code == 202, response.text
    levels = [r["level"] for r in reversed(await listed(client, tenant))]
    assert levels == ["warn", "error", "fatal", "info", "debug", "trace", "info"]


async def test_unknown_level_is_400_naming_the_record(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant
) -> None:
    """A level we cannot map is a validation error naming the record's index and field."""
    body = [{"message": "a"}, {"message": "b", "level": "warn"}, {"message": "c", "level": "loud"}]
    response = await intake.post("/v1/logs", json=body, headers=tenant.public)
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[2].level" in str(error["message"])
    assert "loud" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("2024-03-01T12:00:00+02:00", "2024-03-01T10:00:00.000Z"),
        ("2024-03-01T12:00:00Z", "2024-03-01T12:00:00.000Z"),
        ("2024-03-01T12:00:00", "2024-03-01T12:00:00.000Z"),  # no zone: UTC
        (1_700_000_000, "2023-11-14T22:13:20.000Z"),  # Unix seconds
        (1_700_000_000.5, "2023-11-14T22:13:20.500Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),  # too large for seconds: milliseconds
        (0, "1970-01-01T00:00:00.000Z"),
        (253_402_300_799, "9999-12-31T23:59:59.000Z"),  # the last second of 9999, in seconds
        (253_402_300_800_000, None),  # the first millisecond of year 10000: refused
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),  # the last millisecond of 9999, exactly
        (253_402_300_800, "1978-01-11T21:31:40.800Z"),  # past every second of 9999: milliseconds
        (-1, None),
        ("4", None),  # a numeric string is not a date-time
        (" 1700000000 ", None),
        ("1e9", None),
        (True, None),
    ],
)
async def test_timestamps_as_iso_or_unix_time(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant, sent: object, stored: str | None
) -> None:
    """A record's timestamp may be ISO 8601 (any zone, or none for UTC) or Unix time as a number; it is kept
    in UTC. Numbers are seconds below the first second of year 10000, else milliseconds, so every second of
    1970 to 9999 reads right; anything else is a 400 naming the field."""
    response = await intake.post("/v1/logs", json={"message": "t", "timestamp": sent}, headers=tenant.public)
    if stored is None:
        error = assert_error(
            response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED"
        )
        assert "[0].timestamp" in str(error["message"])
        return
    assert response.status_code == 202, response.text
    [record] = await listed(client, tenant)
    assert record["timestamp"] == stored


async def test_default_timestamp_is_time_of_receipt(
    intake: httpx.AsyncClient, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Without a timestamp a record is timed when the intake received it: its receivedAt, the moment
    its request's group was committed (log record, event, or OTLP record without either time)."""
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    sent = [
        await intake.post("/v1/logs", json={"message": "now"}, headers=tenant.public),
        await intake.post("/v1/events", json={"name": "now"}, headers=tenant.public),
        await intake.post(
            "/v1/logs", json=otlp_json({"body": {"stringValue": "now"}}), headers=tenant.public
        ),
    ]
    after = datetime.now(UTC) + timedelta(milliseconds=1)
    assert [response.status_code for response in sent] == [202, 202, 200]
    records = await listed(client, tenant)
    assert len(records) == 3
    for record in records:
        assert record["timestamp"] == record["receivedAt"]
        assert before <= parse_time(record["timestamp"]) <= after


@pytest.mark.parametrize("sent", ["2024-13-01T00:00:00Z", "yesterday", True, "0001-01-01T00:00:00+14:00"])
async def test_bad_timestamp_is_400(
    intake: httpx.AsyncClient, services: Services, tenant: Tenant, sent: object
) -> None:
    """An impossible date, free text, a boolean, or a time outside the representable range once in UTC is a
    400 naming the field (the last was a 500 from an OverflowError)."""
    response = await intake.post(
        "/v1/logs", json=[{"message": "ok"}, {"message": "t", "timestamp": sent}], headers=tenant.public
    )
    error = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.ingest", reason="VALIDATION_FAILED")
    assert "[1].timestamp" in str(error["message"])
    assert await stored_count(services, tenant.org_id) == 0
