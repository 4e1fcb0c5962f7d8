"""The ``responseFormat`` a run (or an agent) is given: the shapes and the rule that a schema is a schema, in
one place, so runs and agents refuse the same bad format the same way (400 naming the field while the body is
read). What is done with a format (passed to providers, the answer checked, ``OUTPUT_INVALID``) lives with
the runtime; see ``shared/DESIGN.md`` "Structured output".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, cast
from urllib.parse import urlsplit

from jsonschema import FormatChecker, validators
from jsonschema import exceptions as schema_errors
from pydantic import Field, StringConstraints, field_validator

from threadline.kit.schemas import RequestModel

# As OpenAI's chat completions take a json_schema's name.
FORMAT_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# A validation error quotes the value it refused, which may be the whole answer.
_MAX_PROBLEM_CHARS = 2000


class TextFormat(RequestModel):
    type: Literal["text"]


class JsonSchemaFormat(RequestModel):
    type: Literal["json_schema"]
    name: Annotated[str, StringConstraints(pattern=FORMAT_NAME_PATTERN)]
    schema_: dict[str, Any] = Field(
        alias="schema", description="The JSON Schema the final answer must be valid against."
    )
    strict: bool = True

    @field_validator("schema_")
    @classmethod
    def _a_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            validators.validator_for(value).check_schema(value)
        except schema_errors.SchemaError as error:
            raise ValueError(f"schema is not a valid JSON Schema: {error.message}") from None
        return value


ResponseFormat = Annotated[TextFormat | JsonSchemaFormat, Field(discriminator="type")]


def format_json(value: TextFormat | JsonSchemaFormat | None) -> dict[str, Any] | None:
    """As stored and shown back (camelCase, defaults filled in); None stays None (the default, text)."""
    return None if value is None else value.model_dump(mode="json", by_alias=True)


def stored_format(value: dict[str, Any] | None) -> JsonSchemaFormat | None:
    """The json_schema format a run stored (``format_json``); None for text, which asks nothing of the
    answer."""
    if value is None or value.get("type") != "json_schema":
        return None
    return JsonSchemaFormat.model_validate(value)


def answer_problem(response_format: JsonSchemaFormat, answer: str) -> str | None:
    """Why ``answer`` is not one JSON document valid against the format's schema (the run's
    ``OUTPUT_INVALID`` message), or None when it is. Formats are checked where the validator knows them."""
    try:
        document = json.loads(answer)
    except ValueError as error:
        name = response_format.name
        return f"The answer is not one JSON document ({error}); responseFormat {name} asks for one."
    validator_class = validators.validator_for(response_format.schema_)
    validator = validator_class(response_format.schema_, format_checker=FORMATS)
    found = schema_errors.best_match(validator.iter_errors(document))
    if found is None:
        return None
    where = f"responseFormat {response_format.name} at {found.json_path}"
    return f"The answer does not match {where}: {found.message}"[:_MAX_PROBLEM_CHARS]


# The formats answers are checked for: jsonschema's own (date, email, uuid, ipv4, ipv6…) and, as it checks
# these only with optional packages Threadline does not install, date-time, time, uri and hostname here.
FORMATS = FormatChecker()
_Check = Callable[[object], bool]
_checks = cast(Callable[[str], Callable[[_Check], _Check]], FORMATS.checks)  # untyped in jsonschema
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


@_checks("date-time")
def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


@_checks("time")
def _time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    found = _TIME.match(value)
    return found is not None and int(found[1]) < 24 and int(found[2]) < 60 and int(found[3]) < 61


@_checks("uri")
def _uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if any(ch.isspace() for ch in value):
        return False
    try:
        scheme = urlsplit(value).scheme
    except ValueError:
        return False
    return bool(_SCHEME.match(scheme))


@_checks("hostname")
def _hostname(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return 0 < len(value) <= 253 and all(_LABEL.match(label) for label in value.rstrip(".").split("."))
