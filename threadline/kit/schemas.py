"""Base models: camelCase on the wire, snake_case in Python, unknown request fields refused."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

from threadline.kit.clock import isoformat

Timestamp = Annotated[datetime, PlainSerializer(isoformat, return_type=str)]


class ResponseModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class RequestModel(BaseModel):
    """Request bodies: camelCase only, strict types ("30" is not a number, "yes" not a boolean), and an
    unknown field is a 400 rather than silently ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=False,
        validate_by_alias=True,
        extra="forbid",
        strict=True,
    )
