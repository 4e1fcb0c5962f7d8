"""The contract says what the service does: null is offered only where it is accepted, a required
parameter is declared required, and the rules the validators enforce are in the schema too
(``kit.schemas.Documented``), each held here against the validator it restates."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
from pydantic import BaseModel, ValidationError

from tests.automations.helpers import create, schedule
from tests.support import Tenant, assert_error, make_thread
from threadline.automations.schemas import AutomationCreate, TriggerIn
from threadline.keys.schemas import KeyCreate
from threadline.kit.schemas import NOT_BLANK, NOT_BLANK_STRIP
from threadline.projects.schemas import ProjectCreate
from threadline.settings.schemas import SettingsUpdate
from threadline.threads.schemas import ThreadCreate

CONTRACT = json.loads((Path(__file__).resolve().parent.parent / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = CONTRACT["components"]["schemas"]


def _offers_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or any(_offers_null(v) for v in schema.get("anyOf", []))


def _property(model: str, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = SCHEMAS[model]["properties"][name]
    return schema


def _contract_accepts(schema: dict[str, Any], value: Any) -> bool:
    return bool(
        jsonschema_rs.Draft202012Validator({**schema, "components": CONTRACT["components"]}).is_valid(value)
    )


def _service_accepts(model: type[BaseModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


# --- null ------------------------------------------------------------------------------------------------

NULL_REFUSED = [
    ("ThreadUpdate", "metadata"),
    ("AutomationUpdate", "name"),
    ("AutomationUpdate", "enabled"),
    ("AutomationUpdate", "trigger"),
    ("AutomationUpdate", "action"),
    ("SettingsUpdate", "defaultModel"),
    ("SettingsUpdate", "logRetentionDays"),
    ("SettingsUpdate", "allowedOrigins"),
    ("SettingsUpdate", "billingEnforced"),
]


@pytest.mark.parametrize(("model", "name"), NULL_REFUSED)
def test_the_contract_offers_no_null_the_service_refuses(model: str, name: str) -> None:
    assert not _offers_null(_property(model, name)), _property(model, name)


def test_null_is_still_offered_where_it_clears() -> None:
    assert _offers_null(_property("ThreadUpdate", "title"))
    assert _offers_null(_property("SettingsUpdate", "instructions"))


async def test_a_null_metadata_is_refused_as_before(client: httpx.AsyncClient, tenant: Tenant) -> None:
    thread_id = await make_thread(client, tenant)
    response = await client.patch(f"/v1/threads/{thread_id}", headers=tenant.secret, json={"metadata": None})
    body = assert_error(
        response, 400, "BAD_REQUEST", operation_id="threads.update", reason="VALIDATION_FAILED"
    )
    assert body["message"] == "metadata cannot be null; send {} to clear it."


async def test_null_automation_fields_are_refused_as_before(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    automation = await create(client, tenant, schedule())
    response = await client.patch(
        f"/v1/automations/{automation['id']}",
        headers=tenant.secret,
        json={"enabled": None, "trigger": None, "action": None, "name": None},
    )
    body = assert_error(
        response, 400, "BAD_REQUEST", operation_id="automations.update", reason="VALIDATION_FAILED"
    )
    assert body["message"] == "action, enabled, name, trigger cannot be null."
    # A foreign field is still named as the field itself, not as a branch of a union.
    response = await client.patch(
        f"/v1/automations/{automation['id']}",
        headers=tenant.secret,
        json={"trigger": {"type": "log", "cron": "0 * * * *"}},
    )
    body = assert_error(
        response, 400, "BAD_REQUEST", operation_id="automations.update", reason="VALIDATION_FAILED"
    )
    assert body["message"] == "Invalid request: trigger.cron: Value error, not a field of a log trigger."


# --- required ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/search/threads", "/v1/search/messages"])
def test_the_search_words_are_declared_required(path: str) -> None:
    (q,) = [p for p in CONTRACT["paths"][path]["get"]["parameters"] if p["name"] == "q"]
    assert q["required"] is True and q["in"] == "query"
    assert not _contract_accepts(q["schema"], "  \t") and _contract_accepts(q["schema"], "deploy")


@pytest.mark.parametrize(
    ("path", "operation_id"), [("threads", "search.threads"), ("messages", "search.messages")]
)
@pytest.mark.parametrize("params", [{}, {"q": " \x1c "}])
async def test_a_missing_q_is_answered_as_before(
    client: httpx.AsyncClient, tenant: Tenant, path: str, operation_id: str, params: dict[str, str]
) -> None:
    response = await client.get(f"/v1/search/{path}", headers=tenant.secret, params=params)
    body = assert_error(response, 400, "BAD_REQUEST", operation_id=operation_id, missing=["q"])
    assert body["message"] == "Give the search words in the q query parameter."


# --- rules of descriptions, in the schema ---------------------------------------------------------------


def test_metadata_limits_are_in_the_schema_and_agree_with_the_validator() -> None:
    schema = _property("ThreadCreate", "metadata")
    assert schema["maxProperties"] == 16
    assert schema["propertyNames"] == {"minLength": 1, "maxLength": 64}
    assert schema["additionalProperties"] == {"type": "string", "maxLength": 512}
    cases: list[dict[str, str]] = [
        {},
        {f"k{i}": "v" for i in range(16)},
        {f"k{i}": "v" for i in range(17)},
        {"": "v"},
        {"k" * 64: "v"},
        {"k" * 65: "v"},
        {"k": "v" * 512},
        {"k": "v" * 513},
        {"é" * 64: "é" * 512},  # characters, not bytes, on both sides
    ]
    for metadata in cases:
        assert _contract_accepts(schema, metadata) == _service_accepts(
            ThreadCreate, {"metadata": metadata}
        ), metadata


ORIGINS = [
    ["*"],
    ["https://app.example"],
    ["http://localhost:5173", "*"],
    [],
    ["https://app.example/"],
    ["ftp://app.example"],
    ["https://app.example:123456"],
    ["https://app.example\n"],
    ["https://app.example"] * 50,
    ["https://app.example"] * 51,
]


@pytest.mark.parametrize("origins", ORIGINS)
def test_allowed_origins_rules_are_in_the_schema_and_agree_with_the_validator(origins: list[str]) -> None:
    schema = _property("SettingsUpdate", "allowedOrigins")
    assert (schema["minItems"], schema["maxItems"]) == (1, 50)
    assert _contract_accepts(schema, origins) == _service_accepts(SettingsUpdate, {"allowedOrigins": origins})


async def test_an_origin_with_a_trailing_newline_is_refused(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """``$`` matched before a final newline, so such an "origin" was stored (schemathesis found it)."""
    response = await client.patch(
        "/v1/settings", headers=tenant.secret, json={"allowedOrigins": ["https://app.example\n"]}
    )
    assert_error(response, 400, "BAD_REQUEST", operation_id="settings.update", reason="VALIDATION_FAILED")


async def test_errors_keep_their_own_words(client: httpx.AsyncClient, tenant: Tenant) -> None:
    """The constraints live in the schema only: the service answers with its own messages as before."""
    response = await client.patch("/v1/settings", headers=tenant.secret, json={"allowedOrigins": []})
    body = assert_error(
        response, 400, "BAD_REQUEST", operation_id="settings.update", reason="VALIDATION_FAILED"
    )
    assert body["message"] == "Invalid request: allowedOrigins: Value error, 1 to 50 origins."
    metadata = {f"k{i}": "v" for i in range(17)}
    response = await client.post("/v1/threads", headers=tenant.secret, json={"metadata": metadata})
    body = assert_error(
        response, 400, "BAD_REQUEST", operation_id="threads.create", reason="VALIDATION_FAILED"
    )
    assert body["message"] == "Invalid request: metadata: Value error, at most 16 keys."


@pytest.mark.parametrize(
    "model",
    [
        "offline/scripted",
        "openai/gpt-4o",
        "openai/a b",
        "offline/other",
        "openai/",
        "anthropic/claude",
        "",
        "x",
    ],
)
def test_model_names_are_in_the_schema_and_agree_with_the_validator(model: str) -> None:
    for schema in (_property("SettingsUpdate", "defaultModel"), _property("ActionIn", "model")["anyOf"][0]):
        assert _contract_accepts(schema, model) == _service_accepts(SettingsUpdate, {"defaultModel": model})


@pytest.mark.parametrize("level", ["trace", "debug", "info", "warn", "error", "fatal", "verbose!", ""])
def test_level_names_are_an_enum(level: str) -> None:
    schema = _property("TriggerIn", "level")["anyOf"][0]
    assert schema["enum"] == ["trace", "debug", "info", "warn", "error", "fatal"]
    trigger = {"type": "log", "level": level}
    # The service tolerates other loggers' spellings beyond the enum; within it, the two agree.
    if _contract_accepts(schema, level):
        assert _service_accepts(TriggerIn, trigger)
    else:
        assert level in ("verbose!", "") and not _service_accepts(TriggerIn, trigger)


def _white_space(pattern: str, strip: Any) -> list[str]:
    """Code points on which the pattern and the validator disagree about "only whitespace"."""
    compiled = re.compile(pattern)
    return [
        hex(c)
        for c in range(0x10000)  # every White_Space character is in the BMP
        if not 0xD800 <= c < 0xE000 and bool(compiled.search(chr(c))) != bool(strip(chr(c)))
    ]


def test_not_blank_is_what_the_validators_strip() -> None:
    assert _white_space(NOT_BLANK_STRIP, str.strip) == []
    names = {
        "ProjectCreate": (ProjectCreate, {}),
        "KeyCreate": (KeyCreate, {"type": "secret"}),
        "AutomationCreate": (
            AutomationCreate,
            {"trigger": {"type": "schedule", "cron": "@daily"}, "action": {"prompt": "p"}},
        ),
    }
    for name in names:
        assert _property(name, "name")["pattern"] == NOT_BLANK
    model, rest = names["ProjectCreate"]
    assert _white_space(NOT_BLANK, lambda text: _service_accepts(model, {"name": text, **rest})) == []
    for text in ("  ", "\u3000", " a ", "\ufeff"):
        for model, rest in names.values():
            assert _contract_accepts(_property(model.__name__, "name"), text) == _service_accepts(
                model, {"name": text, **rest}
            ), (model, text)


@pytest.mark.parametrize("value", ["0.5", "1700000000", " 4 "])
@pytest.mark.parametrize("name", ["since", "until"])
async def test_selection_times_are_iso_8601_as_declared(
    client: httpx.AsyncClient, tenant: Tenant, name: str, value: str
) -> None:
    """The contract says ``date-time``; "0.5" was read as Unix time (schemathesis found it)."""
    (parameter,) = [p for p in CONTRACT["paths"]["/v1/logs"]["get"]["parameters"] if p["name"] == name]
    assert parameter["schema"]["anyOf"][0]["format"] == "date-time"
    response = await client.get("/v1/logs", headers=tenant.secret, params={name: value})
    body = assert_error(response, 400, "BAD_REQUEST", operation_id="logs.list", reason="VALIDATION_FAILED")
    assert body["message"] == f"Invalid request: {name}: Value error, must be an ISO 8601 date-time."
    response = await client.get("/v1/logs", headers=tenant.secret, params={name: "2026-01-01T00:00:00Z"})
    assert response.status_code == 200, response.text
