"""The committed contract, the code and the served document never drift apart.

After an intended API change: ``threadline openapi --output openapi.json`` and commit the result."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from tests.support import Tenant
from threadline.app import create_app
from threadline.contract import build_contract, render
from threadline.intake_app import create_intake_app

COMMITTED = Path(__file__).resolve().parent.parent / "openapi.json"
# <resource>.<operation>; a resource or operation of two words is camelCase (mcpServers.listTools).
OPERATION_ID = re.compile(r"^[a-z]+(?:[A-Z][a-z]+)*\.[a-z]+(?:[A-Z][a-z]+)*$")


def generated() -> str:
    return render(build_contract(create_app(), create_intake_app()))


def test_committed_contract_matches_the_code() -> None:
    assert COMMITTED.read_text() == generated(), (
        "openapi.json is stale: run `threadline openapi --output openapi.json`"
    )


async def test_served_contract_is_the_committed_file(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.text == COMMITTED.read_text()
    assert response.headers["x-ratelimit-limit"].isdigit()  # under /v1, so limited like everything there


def test_every_operation_is_named_and_documents_its_errors() -> None:
    contract = json.loads(COMMITTED.read_text())
    ids = []
    for path, item in contract["paths"].items():
        for operation in item.values():
            ids.append(operation["operationId"])
            assert OPERATION_ID.match(operation["operationId"]), operation["operationId"]
            responses = operation["responses"]
            assert "422" not in responses
            if path.startswith("/v1/"):
                assert {"401", "403", "429", "500"} <= set(responses), (path, sorted(responses))
                assert responses["429"]["content"]["application/json"]["schema"]["$ref"].endswith(
                    "RateLimitedBody"
                )
    assert len(ids) == len(set(ids))
    assert {
        "me.get",
        "keys.list",
        "keys.create",
        "keys.get",
        "keys.revoke",
        "projects.list",
        "projects.create",
        "projects.get",
        "logs.ingest",
        "events.ingest",
    } <= set(ids)


def test_intake_operations_name_their_server() -> None:
    contract = json.loads(COMMITTED.read_text())
    for path in ("/v1/logs", "/v1/events"):
        assert contract["paths"][path]["post"]["servers"][0]["url"] == "http://127.0.0.1:8081"
    assert contract["servers"][0]["url"] == "http://127.0.0.1:8080"


async def test_docs_render_from_local_assets(client: httpx.AsyncClient, tenant: Tenant) -> None:
    page = await client.get("/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("/docs/assets/") for s in sources), sources
    assert "/v1/openapi.json" in page.text
    assert "http://" not in page.text and "https://" not in page.text
    for source in sources:
        asset = await client.get(source)
        assert asset.status_code == 200 and len(asset.content) > 10_000
