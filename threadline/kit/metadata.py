"""The ``metadata`` string map that threads and messages carry, with its limits in one place."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from threadline.kit.schemas import Documented

MAX_KEYS = 16
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 512


def _check(value: dict[str, str]) -> dict[str, str]:
    if len(value) > MAX_KEYS:
        raise ValueError(f"at most {MAX_KEYS} keys")
    for key, item in value.items():
        if not 1 <= len(key) <= MAX_KEY_CHARS:
            raise ValueError(f"keys are 1 to {MAX_KEY_CHARS} characters")
        if len(item) > MAX_VALUE_CHARS:
            raise ValueError(f"values are at most {MAX_VALUE_CHARS} characters (key {key!r})")
    return value


Metadata = Annotated[
    dict[str, str],
    AfterValidator(_check),
    Documented(
        {
            "maxProperties": MAX_KEYS,
            "propertyNames": {"minLength": 1, "maxLength": MAX_KEY_CHARS},
            "additionalProperties": {"type": "string", "maxLength": MAX_VALUE_CHARS},
        }
    ),
    Field(
        description=f"String map: up to {MAX_KEYS} keys of up to {MAX_KEY_CHARS} characters, "
        f"values of up to {MAX_VALUE_CHARS}."
    ),
]
