"""Structured output on runs, in both shapes: ``responseFormat`` refused when it is not one (400), stored and
shown back, answered by ``offline/scripted`` with a valid document, passed to an OpenAI-compatible server as
chat completions' ``response_format``, and an answer that is not the document asked for failing the run
``OUTPUT_INVALID`` with its message kept, marked."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest

from tests.agent.openai_server import text_reply, tool_calls_reply
from tests.runs.helpers import DONE, read_stream, start_run, types, wait_for_status
from tests.runs.test_openai_runs import api_with_model
from tests.support import Tenant, make_thread
from threadline.agent.models import ToolCall
from threadline.config import Settings

TRIAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "severity": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
        "component": {"type": "string", "minLength": 1, "maxLength": 60},
        "summary": {"type": "string", "maxLength": 500},
        "seenAt": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": True},
    },
    "required": ["severity", "component", "summary"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "name": "triage", "schema": TRIAGE, "strict": True}


async def messages_of(client: httpx.AsyncClient, tenant: Tenant, thread: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/threads/{thread}/messages", headers=tenant.secret)
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


@pytest.mark.parametrize(
    ("response_format", "says"),
    [
        ({"type": "json_schema", "name": "x", "schema": {"type": "nonsense"}}, "not a valid JSON Schema"),
        ({"type": "json_schema", "name": "x", "schema": {"minLength": -1}}, "not a valid JSON Schema"),
        ({"type": "json_schema", "name": "x", "schema": []}, ""),
        ({"type": "json_schema", "name": "has spaces", "schema": {}}, ""),
        ({"type": "json_schema", "schema": {}}, ""),
        ({"type": "json_schema", "name": "x"}, ""),
        ({"type": "json_schema", "name": "x", "schema": {}, "strict": "yes"}, ""),
        ({"type": "xml"}, ""),
        ({"type": "text", "schema": {}}, ""),
        ("json", ""),
    ],
)
async def test_a_format_that_is_not_one_is_400(
    client: httpx.AsyncClient, tenant: Tenant, response_format: object, says: str
) -> None:
    thread = await make_thread(client, tenant)
    response = await client.post(
        f"/v1/threads/{thread}/runs", headers=tenant.secret, json={"responseFormat": response_format}
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["code"], body["operationId"]) == ("BAD_REQUEST", "runs.create")
    assert "responseFormat" in json.dumps(body)
    assert says in json.dumps(body)
    listed = await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret)
    assert listed.json()["data"] == []


async def test_the_format_round_trips_with_defaults_filled_in(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant)
    plain = await start_run(client, tenant, thread, input="#notools hi")
    assert plain["responseFormat"] is None
    await wait_for_status(client, tenant, plain["id"], "completed")
    text = await start_run(client, tenant, thread, responseFormat={"type": "text"})
    assert text["responseFormat"] == {"type": "text"}
    await wait_for_status(client, tenant, text["id"], "completed")
    given = {key: value for key, value in FORMAT.items() if key != "strict"}
    run = await start_run(client, tenant, thread, responseFormat=given, input="#notools hi")
    assert run["responseFormat"] == FORMAT  # strict defaults to true
    fetched = await client.get(f"/v1/runs/{run['id']}", headers=tenant.secret)
    assert fetched.json()["responseFormat"] == FORMAT
    listed = await client.get(f"/v1/threads/{thread}/runs", headers=tenant.secret)
    assert [r["responseFormat"] for r in listed.json()["data"]] == [FORMAT, {"type": "text"}, None]


async def test_the_scripted_model_answers_with_a_valid_document(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant)
    run = await start_run(
        client, tenant, thread, responseFormat=FORMAT, input="Checkout fails with a 502 from payments"
    )
    events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
    assert types(events)[-3:] == ["text_complete", "run_completed", DONE]
    answer = json.loads(events[-3]["text"])
    jsonschema.validate(answer, TRIAGE, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert answer["severity"] == "low" and len(answer["tags"]) == 2
    assert answer["summary"].startswith("Checkout fails with a 502")
    pieces = [e["delta"] for e in events if e != DONE and e["type"] == "text_chunk"]
    assert len(pieces) > 1 and "".join(pieces) == events[-3]["text"]
    done = await wait_for_status(client, tenant, run["id"], "completed")
    assert done["error"] is None
    [*_, message] = await messages_of(client, tenant, thread)
    assert json.loads(message["content"]) == answer
    assert message["metadata"] == {"responseFormat": "triage"}

    # Deterministic: the same request and schema give the same document.
    again = await start_run(
        client,
        tenant,
        thread,
        responseFormat=FORMAT,
        input="#notools Checkout fails with a 502 from payments",
    )
    replay = await read_stream(client, tenant, f"/v1/runs/{again['id']}/stream")
    assert json.loads(replay[-3]["text"]) == answer


async def test_a_schema_the_scripted_model_cannot_satisfy_fails_the_run(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    thread = await make_thread(client, tenant)
    impossible = {"type": "json_schema", "name": "never", "schema": {"type": "string", "not": {}}}
    run = await start_run(client, tenant, thread, responseFormat=impossible, input="#notools anything")
    failed = await wait_for_status(client, tenant, run["id"], "failed")
    assert failed["error"]["code"] == "OUTPUT_INVALID"
    assert "responseFormat never" in failed["error"]["message"]


async def test_the_provider_gets_response_format_and_a_valid_answer_completes(settings: Settings) -> None:
    answer = {"severity": "high", "component": "payments", "summary": "502s from the gateway"}
    script = [
        tool_calls_reply(ToolCall("call_a", "search_messages", json.dumps({"query": "payments"}))),
        text_reply(json.dumps(answer)[:20], json.dumps(answer)[20:]),
    ]
    async with api_with_model(settings, script) as (client, tenant, server):
        thread = await make_thread(client, tenant)
        run = await start_run(
            client, tenant, thread, model="openai/gpt-test", responseFormat=FORMAT, input="go"
        )
        done = await wait_for_status(client, tenant, run["id"], "completed", "failed")
        assert done["status"] == "completed", done["error"]
        for request in server.requests:  # every turn, the tools' turn too
            assert request.body["response_format"] == {
                "type": "json_schema",
                "json_schema": {"name": "triage", "schema": TRIAGE, "strict": True},
            }
        [*_, message] = await messages_of(client, tenant, thread)
        assert json.loads(message["content"]) == answer


async def test_a_text_run_sends_no_response_format(settings: Settings) -> None:
    async with api_with_model(settings, [text_reply("hello")]) as (client, tenant, server):
        thread = await make_thread(client, tenant)
        run = await start_run(
            client, tenant, thread, model="openai/gpt-test", responseFormat={"type": "text"}
        )
        await wait_for_status(client, tenant, run["id"], "completed")
        assert "response_format" not in server.requests[0].body


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ("Sure! The severity is high.", "is not one JSON document"),
        ('{"severity": "high"} {"severity": "low"}', "is not one JSON document"),
        (
            '{"severity": "urgent", "component": "db", "summary": "x"}',
            "at $.severity: 'urgent' is not one of",
        ),
        ('{"severity": "low", "component": "db"}', "'summary' is a required property"),
        ('{"severity": "low", "component": "db", "summary": "x", "seenAt": "yesterday"}', "date-time"),
    ],
)
async def test_an_answer_that_is_not_the_document_fails_output_invalid(
    settings: Settings, reply: str, says: str
) -> None:
    async with api_with_model(settings, [text_reply(reply)]) as (client, tenant, _server):
        thread = await make_thread(client, tenant)
        run = await start_run(
            client, tenant, thread, model="openai/gpt-test", responseFormat=FORMAT, input="go"
        )
        events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
        assert types(events)[-4:] == ["text_complete", "error", "run_completed", DONE]
        assert events[-3]["code"] == "OUTPUT_INVALID" and says in events[-3]["message"]
        failed = await wait_for_status(client, tenant, run["id"], "failed")
        assert failed["error"] == {"code": "OUTPUT_INVALID", "message": events[-3]["message"]}
        # The answer stays in the thread as the model gave it, marked.
        [*_, message] = await messages_of(client, tenant, thread)
        assert message["content"] == reply
        assert message["metadata"] == {"responseFormat": "triage", "outputInvalid": "true"}
