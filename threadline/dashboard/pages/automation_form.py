"""The automation form: what a person typed, read into the API's own request schema
(``AutomationCreate``), so the form refuses exactly what ``POST /v1/automations`` refuses, and each
problem is shown at the field it is about rather than as one message for the whole form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from zoneinfo import available_timezones

from pydantic import ValidationError
from starlette.datastructures import FormData

from threadline.automations.repository import Automation
from threadline.automations.schemas import (
    DEFAULT_COOLDOWN_SECONDS,
    DEFAULT_LEVEL,
    DEFAULT_TIMEZONE,
    AutomationCreate,
)
from threadline.kit.errors import ApiError

# The form's fields, each a plain string as the browser sends it (the checkbox: "on" or absent).
FIELDS = (
    "name",
    "enabled",
    "trigger_type",
    "cron",
    "timezone",
    "project_id",
    "level",
    "contains",
    "cooldown_seconds",
    "prompt",
    "thread_id",
    "model",
)
_MAX_FIELD_CHARS = 40_000  # above every limit of the schema: the schema says what is too long
# Where a problem of the API's schema (its camelCase location) is shown on the form.
_FIELD_AT: dict[tuple[str, ...], str] = {
    ("name",): "name",
    ("enabled",): "enabled",
    ("trigger", "type"): "trigger_type",
    ("trigger", "cron"): "cron",
    ("trigger", "timezone"): "timezone",
    ("trigger", "projectId"): "project_id",
    ("trigger", "level"): "level",
    ("trigger", "contains"): "contains",
    ("trigger", "cooldownSeconds"): "cooldown_seconds",
    ("action", "prompt"): "prompt",
    ("action", "threadId"): "thread_id",
    ("action", "model"): "model",
}
# The services name a reference that does not exist by its place in the API's body.
_FIELD_OF_REFERENCE = {"trigger.projectId": "project_id", "action.threadId": "thread_id"}


@dataclass
class AutomationForm:
    """The form as shown: the values to fill in and the problems found, by field (``form``: the
    problems about no one field)."""

    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def blank(cls) -> AutomationForm:
        return cls(
            {
                "name": "",
                "enabled": "on",
                "trigger_type": "schedule",
                "cron": "0 8 * * 1-5",
                "timezone": DEFAULT_TIMEZONE,
                "project_id": "",
                "level": DEFAULT_LEVEL,
                "contains": "",
                "cooldown_seconds": str(DEFAULT_COOLDOWN_SECONDS),
                "prompt": "",
                "thread_id": "",
                "model": "",
            }
        )

    @classmethod
    def of(cls, automation: Automation) -> AutomationForm:
        """An automation's current settings, for its edit form."""
        form = cls.blank()
        trigger, action = automation.trigger, automation.action
        form.values.update(
            name=automation.name,
            enabled="on" if automation.enabled else "",
            trigger_type=str(trigger["type"]),
            prompt=str(action["prompt"]),
            thread_id=action["threadId"] or "",
            model=action["model"] or "",
        )
        if trigger["type"] == "schedule":
            form.values.update(cron=str(trigger["cron"]), timezone=str(trigger["timezone"]))
        else:
            form.values.update(
                cron="",
                project_id=trigger["projectId"] or "",
                level=str(trigger["level"]),
                contains=trigger["contains"] or "",
                cooldown_seconds=str(trigger["cooldownSeconds"]),
            )
        return form

    @classmethod
    def posted(cls, form: FormData) -> AutomationForm:
        values = {}
        for name in FIELDS:
            value = form.get(name)
            values[name] = value[:_MAX_FIELD_CHARS] if isinstance(value, str) else ""
        return cls(values)

    def validated(self) -> AutomationCreate | None:
        """The body the API would accept, or None with the problems in ``errors``."""
        body = self._body()  # a cooldown that is no number is an error already; the rest still checked
        try:
            validated = AutomationCreate.model_validate(body)
        except ValidationError as error:
            for problem in error.errors():
                where = _FIELD_AT.get(tuple(str(part) for part in problem["loc"]), "form")
                self.errors.setdefault(where, _message(problem))
            return None
        return None if self.errors else validated

    def refused(self, error: ApiError) -> bool:
        """Shows a refusal of the services at its field (a project or thread that is not the
        organization's); False if it is about no field of the form."""
        where, _, message = error.message.partition(": ")
        field_name = _FIELD_OF_REFERENCE.get(where)
        if field_name is None:
            return False
        self.errors[field_name] = message[:1].upper() + message[1:]
        return True

    def _body(self) -> dict[str, Any]:
        """The API's body from the form: an empty optional field is absent, as a client would send it."""
        values = self.values
        kind = values["trigger_type"]
        trigger: dict[str, Any] = {"type": kind}
        if kind == "schedule":
            trigger.update(cron=values["cron"].strip(), timezone=_optional(values["timezone"]))
        elif kind == "log":
            trigger.update(
                projectId=_optional(values["project_id"]),
                level=_optional(values["level"]),
                contains=values["contains"] or None,
                cooldownSeconds=self._cooldown(),
            )
        return {
            "name": values["name"],
            "enabled": values["enabled"] == "on",
            "trigger": trigger,
            "action": {
                "prompt": values["prompt"].replace("\r\n", "\n"),
                "threadId": _optional(values["thread_id"]),
                "model": _optional(values["model"]),
            },
        }

    def _cooldown(self) -> int | None:
        text = self.values["cooldown_seconds"].strip()
        if not text:
            return None
        if not text.isdigit():  # the API takes a JSON number only; a form sends text
            self.errors["cooldown_seconds"] = "Enter a whole number of seconds, like 300."
            return None
        return int(text)


def _optional(value: str) -> str | None:
    return value.strip() or None


def _message(problem: Mapping[str, Any]) -> str:
    kind = problem.get("type")
    if kind == "missing" or (kind == "string_too_short" and problem.get("ctx", {}).get("min_length") == 1):
        return "Required."
    if kind == "literal_error" and problem["loc"] == ("trigger", "type"):
        return "Choose a schedule or a log trigger."
    text = str(problem.get("msg", "Not valid.")).removeprefix("Value error, ")
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


@cache
def timezones() -> tuple[str, ...]:
    """The IANA names the form suggests (any the schedule accepts may be typed)."""
    return tuple(sorted(name for name in available_timezones() if "/" in name or name == "UTC"))
