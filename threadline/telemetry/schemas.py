"""The telemetry record shapes: what the intake accepts and what ``GET /v1/logs`` returns.

Incoming records are validated as typed dicts rather than models: a batch of 1,000 records is validated in
one call of pydantic-core straight from the JSON bytes, and no model object is built per record only to be
taken apart into a row again (measured: the intake's batch throughput is bounded by this step).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, NotRequired, Required

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    WithJsonSchema,
    with_config,
)
from typing_extensions import TypedDict

from threadline.kit.schemas import Documented, ResponseModel, Timestamp

Level = Literal["trace", "debug", "info", "warn", "error", "fatal"]
LEVELS: tuple[Level, ...] = ("trace", "debug", "info", "warn", "error", "fatal")
Kind = Literal["log", "event"]

# What loggers in the wild call these levels; anything else is a 400 naming the record.
_LEVEL_ALIASES: dict[str, Level] = {
    **{level: level for level in LEVELS},
    "warning": "warn",
    "err": "error",
    "critical": "fatal",
    "crit": "fatal",
    "emergency": "fatal",
    "alert": "fatal",
    "panic": "fatal",
    "information": "info",
    "notice": "info",
    "verbose": "debug",
}


def normalize_level(value: str) -> Level:
    level = _LEVEL_ALIASES.get(value.strip().lower())
    if level is None:
        raise ValueError(f"unknown level {value!r}; use one of {', '.join(LEVELS)}")
    return level


def levels_at_or_above(level: Level) -> tuple[Level, ...]:
    return LEVELS[LEVELS.index(level) :]


# The contract lists the six names; the common spellings of other loggers are tolerated beyond it.
LevelIn = Annotated[
    str,
    AfterValidator(normalize_level),
    Documented({"enum": list(LEVELS)}),
    Field(description=f"One of {', '.join(LEVELS)} (also tolerated: any case, `warning`, `critical`…)."),
]


def _in_utc(moment: datetime) -> datetime:
    """A time without a zone is UTC; one that leaves the representable range once in UTC
    (``0001-01-01T00:00:00+01:00``) is a validation error rather than an OverflowError later."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range once converted to UTC") from None


_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def _selection_time(moment: datetime) -> datetime:
    """``since``/``until``: UTC, and within the range ids can express (times before 1970 select nothing
    and far-future ones everything, but out-of-range arithmetic must not become a 500)."""
    moment = _in_utc(moment)
    if not _EARLIEST <= moment <= _LATEST:
        raise ValueError("must be between 1970-01-01 and 9000-01-01")
    return moment


# Unix time as a number: seconds when below the first second of year 10000, else milliseconds up to the
# last millisecond of 9999. Seconds and milliseconds overlap below that bound, so milliseconds before
# 1978-01-11T21:31:40.800Z (values below 253,402,300,800) read as seconds: a record's own time is never
# that old, while every second of 1970 to 9999 must read right. (pydantic's rule, milliseconds above 2e10,
# read 9999 given in seconds as 1978.) A numeric string ("4") is not a date-time: strings must be ISO 8601.
EPOCH_SECONDS_BELOW = 253_402_300_800
_NUMERIC_TEXT = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")


def _unix_time(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be an ISO 8601 date-time or Unix time as a number")
    if isinstance(value, int | float):
        if not 0 <= value < EPOCH_SECONDS_BELOW * 1000:
            raise ValueError("Unix time must be between 1970 and 9999, in seconds or milliseconds")
        if value < EPOCH_SECONDS_BELOW:
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, int):  # exact: no float division of a 15-digit number
            return datetime.fromtimestamp(value // 1000, UTC) + timedelta(milliseconds=value % 1000)
        return datetime.fromtimestamp(value / 1000, UTC)
    if isinstance(value, str) and _NUMERIC_TEXT.match(value):
        raise ValueError("a date-time string must be ISO 8601 (Unix time is sent as a number)")
    return value


def _iso_text(value: Any) -> Any:
    """``since``/``until`` are ISO 8601, as the contract says (``date-time``): a query string of digits
    ("0.5", "1700000000") is refused rather than read as Unix time."""
    if isinstance(value, str) and _NUMERIC_TEXT.match(value):
        raise ValueError("must be an ISO 8601 date-time")
    return value


SelectionTime = Annotated[datetime, BeforeValidator(_iso_text), AfterValidator(_selection_time)]

# A time without a zone is UTC.
ClientTime = Annotated[
    datetime,
    BeforeValidator(_unix_time),
    AfterValidator(_in_utc),
    # What the validator takes, for the contract: an ISO 8601 string, or a number in the range above.
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "number", "minimum": 0, "exclusiveMaximum": EPOCH_SECONDS_BELOW * 1000},
            ]
        }
    ),
    Field(
        strict=False,
        description=(
            "ISO 8601, or Unix time as a number: seconds below 253402300800 (year 10000), milliseconds "
            "from there; default: its `receivedAt`."
        ),
    ),
]
Attributes = Annotated[dict[str, Any], Field(description="Any JSON object.")]
TraceId = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{32}$", description="32 hex digits (W3C trace id).")]
SpanId = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{16}$", description="16 hex digits.")]
_CONFIG = ConfigDict(extra="forbid", strict=True)


@with_config(_CONFIG)
class LogRecordIn(TypedDict):
    """One log record as sent to ``POST /v1/logs``."""

    message: Required[Annotated[str, Field(description="The log line.")]]
    level: NotRequired[LevelIn]
    timestamp: NotRequired[ClientTime]
    attributes: NotRequired[Attributes]
    traceId: NotRequired[TraceId]
    spanId: NotRequired[SpanId]


@with_config(_CONFIG)
class EventIn(TypedDict):
    """One product event as sent to ``POST /v1/events``."""

    name: Required[Annotated[str, Field(min_length=1, max_length=256, description="What happened.")]]
    properties: NotRequired[Attributes]
    timestamp: NotRequired[ClientTime]
    distinctId: NotRequired[Annotated[str, Field(max_length=256, description="Who it happened to.")]]


# A body is one record or an array of them; the first byte says which, so each is validated alone and an
# error names the record instead of listing why the body was neither shape. An array stops at the record
# past the limit (``too_long``): a 5 MiB array of 1.7 million ``{}`` would otherwise be validated whole,
# seconds of CPU spent on a 400 listing every missing field.
MAX_RECORDS = 1000
LOG_RECORD: TypeAdapter[LogRecordIn] = TypeAdapter(LogRecordIn)
LOG_RECORDS: TypeAdapter[list[LogRecordIn]] = TypeAdapter(
    Annotated[list[LogRecordIn], Field(max_length=MAX_RECORDS)]
)
EVENT: TypeAdapter[EventIn] = TypeAdapter(EventIn)
EVENTS: TypeAdapter[list[EventIn]] = TypeAdapter(Annotated[list[EventIn], Field(max_length=MAX_RECORDS)])


class Accepted(ResponseModel):
    accepted: int = Field(
        description="Records committed by this request (all of them, or the request failed)."
    )


class LogRecordOut(ResponseModel):
    id: str
    project_id: str
    kind: Kind
    message: str = Field(description="The log line; for an event, its name.")
    level: Level
    timestamp: Timestamp = Field(description="The record's own time, as sent (default: its `receivedAt`).")
    attributes: dict[str, Any]
    trace_id: str | None
    span_id: str | None
    received_at: Timestamp = Field(
        description="When the intake committed it: `since`, `until`, order and retention go by this."
    )
    name: str | None = Field(description="Events only.")
    properties: dict[str, Any] | None = Field(description="Events only.")
    distinct_id: str | None = Field(description="Events only.")
