"""The intake's answers that the contract promises: OTLP's JSON success answer, and a plain OPTIONS."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import jsonschema_rs
import pytest

from tests.support import Tenant
from tests.telemetry.intake_helpers import otlp_json

CONTRACT = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())


async def test_otlp_json_success_is_in_the_contract(intake: httpx.AsyncClient, tenant: Tenant) -> None:
    ok = CONTRACT["paths"]["/v1/logs"]["post"]["responses"]["200"]["content"]
    assert set(ok) == {"application/json", "application/x-protobuf"}
    response = await intake.post(
        "/v1/logs", headers=tenant.public, json=otlp_json({"body": {"stringValue": "hello"}})
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert jsonschema_rs.Draft202012Validator(ok["application/json"]["schema"]).is_valid(response.json())
    assert response.json() == {}


@pytest.mark.parametrize("path", ["/v1/logs", "/v1/events"])
@pytest.mark.parametrize("headers", [{}, {"origin": "https://app.example"}], ids=["no-origin", "origin"])
async def test_a_plain_options_answers_what_allow_promises(
    intake: httpx.AsyncClient, tenant: Tenant, path: str, headers: dict[str, str]
) -> None:
    """Not a preflight (no Access-Control-Request-Method): 204 with ``Allow``, without a key, where it was
    a 405 whose own ``Allow`` listed OPTIONS."""
    response = await intake.options(path, headers=headers)
    assert response.status_code == 204, response.text
    assert response.headers["allow"] == "POST, OPTIONS"
    assert response.content == b""
    # Any other method is still a 405 with the same list (once the key is accepted).
    response = await intake.put(path, headers={**headers, **tenant.public})
    assert response.status_code == 405 and response.headers["allow"] == "POST, OPTIONS"


@pytest.mark.parametrize(("path", "record"), [("/v1/logs", {"message": "m"}), ("/v1/events", {"name": "n"})])
async def test_the_contract_says_a_timestamp_may_be_a_number(
    intake: httpx.AsyncClient, tenant: Tenant, path: str, record: dict[str, object]
) -> None:
    """Unix time as a number is accepted (and documented): the schema said ``date-time`` strings only
    (schemathesis found it)."""
    body = CONTRACT["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    validator = jsonschema_rs.Draft202012Validator(body)
    for timestamp in (0, 1_700_000_000.5, "2026-11-25T12:00:00Z"):
        assert validator.is_valid({**record, "timestamp": timestamp})
        response = await intake.post(path, headers=tenant.public, json={**record, "timestamp": timestamp})
        assert response.status_code == 202, response.text
    for timestamp in (-1, 253_402_300_800_000, True):
        assert not validator.is_valid({**record, "timestamp": timestamp})
        response = await intake.post(path, headers=tenant.public, json={**record, "timestamp": timestamp})
        assert response.status_code == 400, response.text
