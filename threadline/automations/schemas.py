"""Automation bodies. A trigger is one object whose ``type`` says which of its fields apply; each field is
checked against that type on its own, so an error names the field itself (``trigger.cron``), never a
variant of a union."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StrictBool, StringConstraints, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from threadline.agent.response_format import ResponseFormat, format_json
from threadline.automations.repository import Automation
from threadline.automations.schedule import MAX_CRON_CHARS, check_cron, check_timezone
from threadline.kit.schemas import NOT_BLANK, Documented, NullRefused, RequestModel, ResponseModel, Timestamp
from threadline.settings.schemas import ModelName
from threadline.telemetry.schemas import LEVELS, Level, normalize_level

MAX_PROMPT_CHARS = 32_768
MAX_CONTAINS_CHARS = 1000
MAX_COOLDOWN_SECONDS = 7 * 24 * 3600
DEFAULT_TIMEZONE = "UTC"
DEFAULT_LEVEL: Level = "error"
DEFAULT_COOLDOWN_SECONDS = 300

TriggerType = Literal["schedule", "log"]


def _no_nul(value: str) -> str:
    """PostgreSQL text and JSONB cannot hold U+0000: refused here rather than failing the insert."""
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


NoNul = AfterValidator(_no_nul)
Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    NoNul,
    Documented({"pattern": NOT_BLANK}),
]
ResourceId = Annotated[str, StringConstraints(min_length=1, max_length=40)]

_FIELDS_OF: dict[str, tuple[str, ...]] = {
    "schedule": ("cron", "timezone"),
    "log": ("project_id", "level", "contains", "cooldown_seconds"),
}


def _applies(name: str, value: Any, info: ValidationInfo) -> bool:
    """Whether ``name`` belongs to the trigger's type: required ones must be there, foreign ones not."""
    kind = info.data.get("type")
    if kind is None:  # the type itself was invalid: that is the error to report
        return False
    if name not in _FIELDS_OF[kind]:
        if value is not None:
            raise ValueError(f"not a field of a {kind} trigger")
        return False
    return True


class TriggerIn(RequestModel):
    type: TriggerType = Field(description="`schedule` (cron) or `log` (an ingested record matches).")
    cron: str | None = Field(
        None,
        max_length=MAX_CRON_CHARS,
        validate_default=True,
        description="schedule: five cron fields (minute hour day-of-month month day-of-week) or "
        "@hourly, @daily, @weekly, @monthly, @yearly. Required.",
    )
    timezone: str | None = Field(
        None,
        max_length=64,
        description=f"schedule: IANA time zone the cron is read in (default {DEFAULT_TIMEZONE}).",
    )
    project_id: ResourceId | None = Field(
        None, description="log: only this project's records (default: any)."
    )
    level: Annotated[str, Documented({"enum": list(LEVELS)})] | None = Field(
        None,
        max_length=16,
        description=f"log: records at this level or above ({', '.join(LEVELS)}; default {DEFAULT_LEVEL}).",
    )
    contains: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONTAINS_CHARS), NoNul] | None = (
        Field(None, description="log: only records whose message contains this text (case-insensitive).")
    )
    cooldown_seconds: int | None = Field(
        None,
        ge=0,
        le=MAX_COOLDOWN_SECONDS,
        description=f"log: fire at most once per this many seconds (default {DEFAULT_COOLDOWN_SECONDS}).",
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None, info: ValidationInfo) -> str | None:
        if not _applies("cron", value, info):
            return value
        if value is None:
            raise PydanticCustomError("missing", "Field required")
        return check_cron(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not _applies("timezone", value, info):
            return value
        return check_timezone(value)

    @field_validator("project_id", "contains", "cooldown_seconds")
    @classmethod
    def _log_only(cls, value: Any, info: ValidationInfo) -> Any:
        assert info.field_name is not None
        _applies(info.field_name, value, info)
        return value

    @field_validator("level")
    @classmethod
    def _level(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not _applies("level", value, info):
            return value
        return normalize_level(value)

    def stored(self) -> dict[str, Any]:
        """The trigger as kept and shown: every field of its type, defaults filled in."""
        if self.type == "schedule":
            assert self.cron is not None
            return {"type": "schedule", "cron": self.cron, "timezone": self.timezone or DEFAULT_TIMEZONE}
        return {
            "type": "log",
            "projectId": self.project_id,
            "level": self.level or DEFAULT_LEVEL,
            "contains": self.contains,
            "cooldownSeconds": (
                DEFAULT_COOLDOWN_SECONDS if self.cooldown_seconds is None else self.cooldown_seconds
            ),
        }


class ActionIn(RequestModel):
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROMPT_CHARS), NoNul] = Field(
        description="The run's input (a user message); a log trigger appends the matching record to it."
    )
    thread_id: ResourceId | None = Field(
        None, description="Run on this thread (queued behind its active run); null: a new thread per firing."
    )
    model: ModelName | None = Field(
        None, description="`provider/model`; null: the agent's model, else the organization's default."
    )
    response_format: ResponseFormat | None = Field(
        None, description="The runs' `responseFormat` (as on `POST …/runs`); null: the agent's, else text."
    )
    agent_id: ResourceId | None = Field(None, description="Runs use this agent (`agt_…`); null: none.")
    agent_version: int | None = Field(
        None, ge=1, description="The agent's version (needs `agentId`); null: its latest at each firing."
    )

    def stored(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "threadId": self.thread_id,
            "model": self.model,
            "agentId": self.agent_id,
            "agentVersion": self.agent_version,
            "responseFormat": format_json(self.response_format),
        }


class AutomationCreate(RequestModel):
    name: Name
    enabled: StrictBool = True
    trigger: TriggerIn
    action: ActionIn


class AutomationUpdate(RequestModel):
    """Fields present are replaced (``trigger`` and ``action`` as whole objects); absent ones are kept.
    None of them can be null (400, ``endpoints.update_automation``): the contract does not offer null."""

    name: Annotated[Name | None, NullRefused()] = None
    enabled: Annotated[StrictBool | None, NullRefused()] = None
    trigger: Annotated[TriggerIn | None, NullRefused()] = None
    action: Annotated[ActionIn | None, NullRefused()] = None


class ScheduleTriggerOut(ResponseModel):
    type: Literal["schedule"]
    cron: str
    timezone: str


class LogTriggerOut(ResponseModel):
    type: Literal["log"]
    project_id: str | None
    level: Level
    contains: str | None
    cooldown_seconds: int


class ActionOut(ResponseModel):
    prompt: str
    thread_id: str | None
    model: str | None
    agent_id: str | None
    agent_version: int | None
    response_format: dict[str, Any] | None = Field(description="As given (defaults filled in); null: text.")


class AutomationError(ResponseModel):
    code: str
    message: str


class AutomationOut(ResponseModel):
    id: str
    name: str
    enabled: bool
    trigger: Annotated[ScheduleTriggerOut | LogTriggerOut, Field(discriminator="type")]
    action: ActionOut
    last_triggered_at: Timestamp | None = Field(description="When it last fired (by its trigger or by hand).")
    next_run_at: Timestamp | None = Field(description="Schedules: when it fires next; null otherwise.")
    last_error: AutomationError | None = Field(
        description="Why its last firing started no run (e.g. THREAD_NOT_FOUND, INSUFFICIENT_CREDITS); "
        "null once a firing succeeds."
    )
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, automation: Automation) -> AutomationOut:
        return cls.model_validate(
            {
                "id": automation.id,
                "name": automation.name,
                "enabled": automation.enabled,
                "trigger": automation.trigger,
                # Actions stored before agents and responseFormat existed have neither: null.
                "action": {
                    "responseFormat": None,
                    "agentId": None,
                    "agentVersion": None,
                    **automation.action,
                },
                "lastTriggeredAt": automation.last_triggered_at,
                "nextRunAt": automation.next_run_at,
                "lastError": automation.last_error,
                "createdAt": automation.created_at,
                "updatedAt": automation.updated_at,
            }
        )
