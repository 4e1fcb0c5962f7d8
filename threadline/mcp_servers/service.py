"""MCP server rules: registration checked against the egress rules, header values sealed, and sessions.

Header values are sealed as one JSON object bound to the server's id and opened only to connect, so they
exist in clear only in the memory of a process talking to the server. Nothing here holds a database
transaction while it talks to a server: ``endpoint_for`` reads what connecting needs in a short
transaction, and the session (``connection.open_session``) runs outside it, for as long as its caller
(a request, or later a run's turns) needs it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from threadline.kit.db import Conn, Database
from threadline.kit.egress import EgressPolicy, EgressRefused
from threadline.kit.encryption import SealError, SecretBox
from threadline.kit.errors import BadGateway, BadRequest, NotFound, Reason, ServiceUnavailable
from threadline.kit.ids import new_id
from threadline.kit.pagination import CursorParams
from threadline.mcp_servers.connection import Endpoint, McpSession, McpUnreachable, ToolInfo, open_session
from threadline.mcp_servers.repository import McpServer, McpServerRepository
from threadline.mcp_servers.schemas import McpServerCreate

FIRST_PAGE = CursorParams(limit=20, after_id=None)


async def check_egress(policy: EgressPolicy, url: str) -> None:
    try:
        await policy.check(url)
    except EgressRefused as exc:
        raise BadRequest(str(exc), reason=Reason.EGRESS_NOT_ALLOWED, missing_context=["url"]) from exc


def _seal(box: SecretBox | None, server_id: str, headers: Mapping[str, str]) -> str | None:
    if not headers:
        return None
    if box is None:
        raise ServiceUnavailable(
            "Header values are stored encrypted and no key is configured: the operator must set "
            "THREADLINE_ENCRYPTION_KEY."
        )
    return box.seal(json.dumps(dict(headers)).encode(), associated=server_id.encode())


def _open(box: SecretBox | None, server: McpServer) -> dict[str, str]:
    if server.headers_sealed is None:
        return {}
    if box is None:
        raise SealError("no key is configured to open the server's header values")
    opened: dict[str, str] = json.loads(box.open(server.headers_sealed, associated=server.id.encode()))
    return opened


async def create_server(
    conn: Conn,
    organization_id: str,
    body: McpServerCreate,
    *,
    now: datetime,
    policy: EgressPolicy,
    box: SecretBox | None,
) -> McpServer:
    await check_egress(policy, body.url)
    server_id = new_id("mcp")
    server = McpServer(
        id=server_id,
        organization_id=organization_id,
        name=body.name,
        url=body.url,
        transport=body.transport,
        header_names=list(body.headers),
        headers_sealed=_seal(box, server_id, body.headers),
        timeout_seconds=body.timeout_seconds,
        created_at=now,
        updated_at=now,
    )
    await McpServerRepository(conn, organization_id).insert(server)
    return server


async def get_server(conn: Conn, organization_id: str, server_id: str) -> McpServer:
    server = await McpServerRepository(conn, organization_id).get(server_id)
    if server is None:
        raise NotFound(f"MCP server {server_id} was not found.")
    return server


async def list_servers(
    conn: Conn, organization_id: str, params: CursorParams
) -> tuple[Sequence[McpServer], str | None]:
    return await McpServerRepository(conn, organization_id).page(params)


async def update_server(
    conn: Conn,
    organization_id: str,
    server_id: str,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    policy: EgressPolicy,
    box: SecretBox | None,
) -> McpServer:
    """``changes``: the fields the client sent; ``headers`` replaces every header (``{}`` removes them)."""
    current = await get_server(conn, organization_id, server_id)
    if "url" in changes:
        await check_egress(policy, changes["url"])
    updated = replace(
        current,
        name=changes.get("name", current.name),
        url=changes.get("url", current.url),
        transport=changes.get("transport", current.transport),
        timeout_seconds=changes.get("timeout_seconds", current.timeout_seconds),
        updated_at=now,
    )
    if "headers" in changes:
        headers: Mapping[str, str] = changes["headers"]
        updated = replace(updated, header_names=list(headers), headers_sealed=_seal(box, server_id, headers))
    await McpServerRepository(conn, organization_id).save(updated)
    return updated


async def delete_server(conn: Conn, organization_id: str, server_id: str) -> McpServer:
    server = await get_server(conn, organization_id, server_id)
    await McpServerRepository(conn, organization_id).delete(server_id)
    return server


async def endpoint_for(
    db: Database, organization_id: str, server_id: str, *, box: SecretBox | None
) -> Endpoint:
    """What connecting to the organization's server needs, header values opened, read in a transaction of
    its own that ends before any connection. 404 as for any server the organization cannot see; 502
    ``MCP_UNREACHABLE`` when the values cannot be opened (the key that sealed them is no longer configured):
    the server cannot be called as registered."""
    async with db.transaction(write=False) as conn:
        server = await get_server(conn, organization_id, server_id)
    try:
        headers = _open(box, server)
    except SealError as exc:
        raise BadGateway(
            "The server's header values cannot be decrypted with the configured keys; set its headers again.",
            reason=Reason.MCP_UNREACHABLE,
        ) from exc
    return Endpoint(server.url, server.transport, headers, server.timeout_seconds)


@asynccontextmanager
async def session(
    db: Database, organization_id: str, server_id: str, *, box: SecretBox | None, policy: EgressPolicy
) -> AsyncIterator[McpSession]:
    """A session to one of the organization's servers, for as many calls as the caller makes
    (``McpSession.call_tool`` answers each with a result or an error result, never raising). 502
    ``MCP_UNREACHABLE`` when it cannot be opened."""
    endpoint = await endpoint_for(db, organization_id, server_id, box=box)
    try:
        async with open_session(endpoint, policy) as opened:
            yield opened
    except McpUnreachable as exc:
        message = f"The MCP server could not be reached: {exc}."
        raise BadGateway(message, reason=Reason.MCP_UNREACHABLE) from exc


async def list_tools(
    db: Database, organization_id: str, server_id: str, *, box: SecretBox | None, policy: EgressPolicy
) -> list[ToolInfo]:
    """The server's tools now, asked over a session of their own."""
    async with session(db, organization_id, server_id, box=box, policy=policy) as opened:
        try:
            return await opened.list_tools()
        except McpUnreachable as exc:
            raise BadGateway(
                f"The MCP server did not list its tools: {exc}.", reason=Reason.MCP_UNREACHABLE
            ) from exc
