"""The client against the contract (openapi.json): every operation it lists is a method of the client,
and every result model has the fields of its schema, required where the schema requires them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from threadline_client import AsyncThreadline, Threadline
from threadline_client import types as t
from threadline_client._endpoints import Endpoint, Resource

CONTRACT = json.loads((Path(__file__).parents[2] / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = CONTRACT["components"]["schemas"]

MODELS: dict[type[BaseModel], str] = {
    t.Accepted: "Accepted",
    t.Artifact: "ArtifactOut",
    t.Automation: "AutomationOut",
    t.AutomationAction: "ActionOut",
    t.AutomationError: "AutomationError",
    t.Balance: "BalanceOut",
    t.Health: "Health",
    t.Key: "KeyOut",
    t.KeyCreated: "KeyCreated",
    t.LedgerPagination: "LedgerPagination",
    t.LogRecord: "LogRecordOut",
    t.LogTrigger: "LogTriggerOut",
    t.McpServer: "McpServerOut",
    t.Agent: "AgentOut",
    t.McpTool: "McpToolOut",
    t.McpToolList: "McpToolList",
    t.Me: "MeOut",
    t.Message: "MessageOut",
    t.MessageHit: "MessageHit",
    t.Organization: "OrganizationOut",
    t.Project: "ProjectOut",
    t.RateLimit: "RateLimitOut",
    t.RequiredAction: "RequiredAction",
    t.RequiredToolCall: "RequiredToolCall",
    t.Run: "RunOut",
    t.RunError: "RunError",
    t.RunStreamToken: "RunStreamTokenOut",
    t.RunUsage: "RunUsage",
    t.ScheduleTrigger: "ScheduleTriggerOut",
    t.SearchPagination: "SearchPagination",
    t.Settings: "SettingsOut",
    t.Thread: "ThreadOut",
    t.Webhook: "WebhookOut",
    t.WebhookCreated: "WebhookCreated",
    t.WebhookDelivery: "DeliveryOut",
    t.ThreadHit: "ThreadHit",
    t.ThreadStreamToken: "ThreadStreamTokenOut",
    t.Transaction: "TransactionOut",
}


def contract_operations() -> set[str]:
    return {
        operation["operationId"]
        for methods in CONTRACT["paths"].values()
        for method, operation in methods.items()
        if method in ("get", "post", "put", "patch", "delete")
    }


def client_operations(client: Threadline | AsyncThreadline) -> dict[str, str]:
    """operationId -> the method's path from the client (``threads.get``)."""
    found: dict[str, str] = {}
    for attribute, resource in vars(client).items():
        if not isinstance(resource, Resource):
            continue
        for name, member in vars(type(resource)).items():
            if isinstance(member, Endpoint):
                assert member.operation_id not in found, f"{member.operation_id} twice"
                found[member.operation_id] = f"{attribute}.{name}"
    return found


@pytest.mark.parametrize("client_class", [Threadline, AsyncThreadline])
def test_every_operation_of_the_contract_is_a_method(
    client_class: type[Threadline | AsyncThreadline],
) -> None:
    client = client_class(api_key="sk_test", public_key="pk_test")
    operations = client_operations(client)
    assert set(operations) == contract_operations()
    for path in operations.values():
        resource, method = path.split(".")
        assert callable(getattr(getattr(client, resource), method))


def test_every_response_schema_has_a_model() -> None:
    """Each schema a 2xx answer refers to (directly, in a page, or nested) has its model here."""
    referred: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if (
                isinstance(ref, str)
                and ref.startswith("#/components/schemas/")
                and ref.split("/")[-1] not in referred
            ):
                referred.add(ref.split("/")[-1])
                walk(SCHEMAS[ref.split("/")[-1]])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for methods in CONTRACT["paths"].values():
        for method, operation in methods.items():
            if method in ("get", "post", "patch", "delete"):
                for status, answer in operation["responses"].items():
                    if status.startswith("2"):
                        walk(answer)
    pages = {
        name for name in referred if name.startswith("CursorPage_") or name.endswith(("Results", "Page"))
    }
    assert referred - pages == set(MODELS.values())


@pytest.mark.parametrize("model", list(MODELS), ids=lambda m: m.__name__)
def test_model_fields_match_the_schema(model: type[BaseModel]) -> None:
    schema = SCHEMAS[MODELS[model]]
    fields = {field.alias or name: field for name, field in model.model_fields.items()}
    assert set(fields) == set(schema["properties"])
    assert {alias for alias, field in fields.items() if field.is_required()} == set(
        schema.get("required", [])
    )
