"""Form input checked by the API's own request schemas, with each problem shown at its field: the
dashboard and ``/v1`` refuse the same values for the same reasons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from threadline.kit.errors import ApiError

M = TypeVar("M", bound=BaseModel)

FieldErrors = dict[str, str]


def _sentence(message: str) -> str:
    message = message.removeprefix("Value error, ").strip()
    message = message[:1].upper() + message[1:]
    return message if message.endswith((".", "?", "!")) else message + "."


def validate(schema: type[M], body: Mapping[str, Any], fields: Mapping[str, str]) -> M | FieldErrors:
    """``body`` as the API receives it (camelCase names); ``fields`` maps those names to the form's.
    Returns the model, or the first problem of each field (a problem outside them goes to ``""``)."""
    try:
        return schema.model_validate(dict(body))
    except ValidationError as exc:
        errors: FieldErrors = {}
        for problem in exc.errors():
            loc = problem.get("loc") or ("",)
            field = fields.get(str(loc[0]), "")
            errors.setdefault(field, _sentence(str(problem.get("msg", "Not valid"))))
        return errors


def error_of(exc: ApiError) -> str:
    return _sentence(exc.message)
