"""The ``responseFormat`` a run (or an agent) is given: the shapes and the rule that a schema is a schema, in
one place, so runs and agents refuse the same bad format the same way (400 naming the field while the body is
read). What is done with a format (passed to providers, the answer checked, ``OUTPUT_INVALID``) lives with
the runtime; see ``shared/DESIGN.md`` "Structured output".
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from jsonschema import exceptions as schema_errors
from jsonschema import validators
from pydantic import Field, StringConstraints, field_validator

from threadline.kit.schemas import RequestModel

# As OpenAI's chat completions take a json_schema's name.
FORMAT_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


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
