"""Base models: camelCase on the wire, snake_case in Python, unknown request fields refused."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler, PlainSerializer
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

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


@dataclass(frozen=True, slots=True, eq=False)  # hashed by identity: typing hashes Annotated metadata
class Documented:
    """Constraints the contract states for a value its validators already enforce in their own words.

    Written into the JSON schema only (``minLength``, ``pattern``, ``maxProperties``…), so generated clients
    and validators know the rule, while the service still refuses with its own message (a pydantic
    constraint would replace it with pydantic's). The rule and the validator must agree:
    tests/test_contract_rules.py holds each one against the other."""

    constraints: Mapping[str, Any]

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema.update(self.constraints)
        return schema


# "Not only whitespace" as a pattern: a character class of its own rather than ``\S``, whose meaning differs
# between regex engines (ECMA-262's counts U+FEFF). ``NOT_BLANK`` is what ``strip_whitespace`` leaves
# something of (Unicode White_Space), ``NOT_BLANK_STRIP`` what Python's ``str.strip`` does (U+001C…U+001F
# too). tests/test_contract_rules.py checks both against every code point.
_WHITE_SPACE = "\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
NOT_BLANK = f"[^{_WHITE_SPACE}]"
NOT_BLANK_STRIP = f"[^{_WHITE_SPACE}\\x1c-\\x1f]"


class NullRefused:
    """On ``X | None``: the contract offers ``X`` only. For an update's field whose absence means "keep"
    and whose null the service refuses with a 400 of its own. (``SkipJsonSchema[None]`` would do it by
    making the field a union, which renames its validation errors: ``trigger.TriggerIn.cron``.)"""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        variants = [v for v in schema.pop("anyOf", []) if v != {"type": "null"}]
        if len(variants) != 1:
            raise TypeError("NullRefused applies to an optional field of one type")
        return {**variants[0], **schema}
