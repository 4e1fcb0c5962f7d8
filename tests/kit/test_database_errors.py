"""A database error reaches the log without what it bound or quoted (issue 36): the engine hides
parameters, and the request path logs the error's class and the request id, not its text."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from starlette.types import Receive, Scope, Send

from threadline.config import Settings
from threadline.kit.context import RequestContextMiddleware
from threadline.kit.db import Database
from threadline.kit.routing import OperationIndex

TENANT_TEXT = "acme-confidential-customer-name"
ORG_ID = "org_0123456789abcdef"


async def test_a_failing_statement_logs_its_class_and_request_id_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = Database(f"sqlite:///{tmp_path / 'errors.db'}")
    async with db.transaction() as conn:
        await conn.execute(sa.text("CREATE TABLE notes (organization_id TEXT, body TEXT, UNIQUE (body))"))
        await conn.execute(
            sa.text("INSERT INTO notes VALUES (:org, :body)"), {"org": ORG_ID, "body": TENANT_TEXT}
        )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        async with db.transaction() as conn:  # a duplicate: the driver's message quotes the statement
            await conn.execute(
                sa.text("INSERT INTO notes VALUES (:org, :body)"), {"org": ORG_ID, "body": TENANT_TEXT}
            )

    served = RequestContextMiddleware(app, OperationIndex([]))
    try:
        with caplog.at_level(logging.ERROR, logger="threadline.request"):
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=served), base_url="http://t"
            ) as http:
                response = await http.post("/v1/notes", headers={"X-Request-Id": "req_seen"})
    finally:
        await db.dispose()
    assert response.status_code == 500
    logged = caplog.text  # each record as written, traceback included
    assert "req_seen" in logged and "IntegrityError" in logged
    assert TENANT_TEXT not in logged and ORG_ID not in logged
    assert "INSERT INTO" not in logged


async def test_a_database_errors_text_carries_no_bound_values(settings: Settings) -> None:
    """Any other log of a database error (a background task's) carries no bound values either."""
    db = Database(settings.resolved_database_url)
    try:
        with pytest.raises(sa.exc.DBAPIError) as raised:
            async with db.transaction(write=False) as conn:
                await conn.execute(sa.text("SELECT * FROM no_such_table WHERE x = :x"), {"x": TENANT_TEXT})
    finally:
        await db.dispose()
    assert "no_such_table" in str(raised.value)
    assert TENANT_TEXT not in str(raised.value)
