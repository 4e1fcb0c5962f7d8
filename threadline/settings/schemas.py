from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StrictBool, StringConstraints

from threadline.kit.schemas import Documented, NullRefused, RequestModel, ResponseModel
from threadline.organizations.schemas import RateLimitOut

MAX_INSTRUCTIONS_CHARS = 32_768
MAX_ORIGINS = 50
MAX_LOG_RETENTION_DAYS = 3650
_ORIGIN = r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?"
# The contract's form of the rule below (anchored as JSON Schema patterns are not).
ORIGIN_PATTERN = rf"^(\*|{_ORIGIN})$"


def _origins(value: list[str]) -> list[str]:
    if not 1 <= len(value) <= MAX_ORIGINS:
        raise ValueError(f"1 to {MAX_ORIGINS} origins")
    for origin in value:
        # fullmatch: ``$`` would let a trailing newline through ("http://a.example\n")
        if origin != "*" and not re.fullmatch(_ORIGIN, origin):
            raise ValueError(f"{origin!r} is not an origin: use '*' or scheme://host[:port] with no path")
    return value


# The names runs accept (one check for both: a setting naming a model no run could use is refused), and the
# one statement of the rule: ``offline/scripted``, or ``openai/`` and any model name. The contract shows the
# pattern; ``check_model_name`` applies it, and the agent's registry asks it before choosing a provider.
MODEL_PATTERN = r"^(offline/scripted|openai/[\s\S]+)$"
_MODEL = re.compile(MODEL_PATTERN)


def check_model_name(name: str) -> str:
    """Refuses names no provider can serve (ValueError with a message for humans)."""
    if _MODEL.fullmatch(name):
        return name
    provider, _, model = name.partition("/")
    if provider == "offline" and model:
        raise ValueError(f"unknown offline model {model!r}; the offline provider has offline/scripted")
    raise ValueError(f"unknown model {name!r}: use offline/scripted or openai/<model>")


ModelName = Annotated[
    str,
    StringConstraints(max_length=200),
    AfterValidator(check_model_name),
    Documented({"pattern": MODEL_PATTERN}),
]
Origins = Annotated[
    list[str],
    AfterValidator(_origins),
    Documented(
        {"minItems": 1, "maxItems": MAX_ORIGINS, "items": {"type": "string", "pattern": ORIGIN_PATTERN}}
    ),
]


class SettingsUpdate(RequestModel):
    """Fields present are replaced; fields absent are left as they are. Only ``instructions`` may be null
    (``service.update_settings`` refuses null elsewhere): the contract offers null there only."""

    default_model: Annotated[ModelName | None, NullRefused()] = Field(
        None, description="Model for runs that name none."
    )
    instructions: Annotated[str, StringConstraints(max_length=MAX_INSTRUCTIONS_CHARS)] | None = Field(
        None, description="System instructions for runs that give none; null clears them."
    )
    log_retention_days: Annotated[int | None, NullRefused()] = Field(
        None, ge=1, le=MAX_LOG_RETENTION_DAYS, description="Telemetry older than this is deleted."
    )
    allowed_origins: Annotated[Origins | None, NullRefused()] = Field(
        None, description="Origins the intake answers browsers for (CORS); `*` for any."
    )
    billing_enforced: Annotated[StrictBool | None, NullRefused()] = Field(
        None, description="Refuse new runs (409 INSUFFICIENT_CREDITS) while the balance is not positive."
    )
    # Sending them is a 400 READ_ONLY_FIELD: readOnly tells generated clients not to.
    rate_limit: Any = Field(
        None,
        description="Read-only: an operator changes it with `threadline orgs set-limit`.",
        json_schema_extra={"readOnly": True},
    )
    run_concurrency: Any = Field(
        None,
        description="Read-only: an operator changes it with `threadline orgs set-limit`.",
        json_schema_extra={"readOnly": True},
    )


class SettingsOut(ResponseModel):
    default_model: str
    instructions: str | None
    log_retention_days: int
    allowed_origins: list[str]
    billing_enforced: bool
    rate_limit: RateLimitOut = Field(description="Read-only.")
    run_concurrency: int = Field(
        description="Read-only: the organization's runs executing at once (across every process); the "
        "others wait, queued."
    )
