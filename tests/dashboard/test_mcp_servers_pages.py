"""Settings > MCP servers over ASGI: the list, adding (headers entered once: never on a page again, not even
when the form comes back with a problem), the refusals at their fields, a server's page with its tools'
problem shown, deleting, and another organization's server as the 404 page. No test here connects
anywhere: the app's egress rules allow no private address, and the one listed public address is never
called (the live tool list against a real server is tests/dashboard/browser/test_mcp_servers_journey.py)."""

from __future__ import annotations

import re

from tests.dashboard.support import Dashboard
from tests.support import Tenant
from threadline.kit.egress import EgressPolicy
from threadline.mcp_servers import service
from threadline.mcp_servers.schemas import McpServerCreate
from threadline.runtime import Services

SECRET = "Bearer dashboard-secret-0123456789"


async def added_id(response_location: str) -> str:
    found = re.search(r"added=(mcp_[0-9a-z]{26})", response_location)
    assert found is not None, response_location
    return found.group(1)


ADD = {
    "name": "Orders",
    "url": "https://8.8.8.8/mcp",
    "transport": "sse",
    "headers": f"Authorization: {SECRET}\n\nX-Team: ops",
    "timeout": "12.5",
}


async def test_add_list_and_never_show_a_header_value(dashboard: Dashboard, services: Services) -> None:
    empty = await dashboard.get("/settings/mcp-servers")
    assert empty.status_code == 200 and "No MCP servers yet." in empty.text
    posted = await dashboard.post("/settings/mcp-servers", ADD)
    if services.secret_box is None:  # the distributed shape of these tests sets no key: nothing to seal with
        assert posted.status_code == 400 and "THREADLINE_ENCRYPTION_KEY" in posted.text
        assert SECRET not in posted.text
        return
    assert posted.status_code == 303
    server_id = await added_id(posted.headers["location"])
    page = await dashboard.get(posted.headers["location"])
    html = page.text
    assert "“Orders” is registered." in html and f'id="server-{server_id}"' in html
    assert (
        "<code>Authorization</code>, <code>X-Team</code>" in html
        and "HTTP + SSE" in html
        and "12.5 s" in html
    )
    assert SECRET not in html and "dashboard-secret" not in html


PROBLEMS = [
    ({"name": "", "url": "https://8.8.8.8/"}, "server-name", "at least 1 character"),
    ({"name": "x", "url": "ftp://8.8.8.8/"}, "server-url", "http:// or https://"),
    ({"name": "x", "url": "http://10.0.0.1/"}, "server-url", "not public"),
    ({"name": "x", "url": "https://8.8.8.8/", "headers": f"no {SECRET}"}, "server-headers", "Line 1"),
    ({"name": "x", "url": "https://8.8.8.8/", "headers": f"Host: {SECRET}"}, "server-headers", "Host"),
    ({"name": "x", "url": "https://8.8.8.8/", "timeout": "soon"}, "server-timeout", "number"),
]


async def test_problems_at_their_fields(dashboard: Dashboard) -> None:
    """One signed-in session for every case (a sign-in hashes a password: seconds on a loaded machine)."""
    for fields, field, message in PROBLEMS:
        response = await dashboard.post("/settings/mcp-servers", fields)
        assert response.status_code == 400
        error = re.search(rf'id="{field}-error">([^<]*)<', response.text)
        assert error is not None and message in error.group(1), (fields, response.text[:2000])
        assert SECRET not in response.text  # the header values are asked for again, never echoed


async def test_a_servers_page_shows_why_its_tools_are_missing_and_deletes(
    dashboard: Dashboard, services: Services, tenant: Tenant
) -> None:
    async with services.db.transaction() as conn:  # registered while 127.0.0.1 was allowed, not any more
        body = McpServerCreate.model_validate({"name": "Local", "url": "http://127.0.0.1:9/mcp"})
        server = await service.create_server(
            conn, tenant.org_id, body, now=services.clock.now(), policy=EgressPolicy("127.0.0.1"), box=None
        )
    page = await dashboard.get(f"/settings/mcp-servers/{server.id}")
    assert page.status_code == 200
    assert "could not be reached" in page.text and "not public" in page.text
    deleted = await dashboard.post(f"/settings/mcp-servers/{server.id}/delete")
    assert deleted.status_code == 303 and deleted.headers["location"] == "/settings/mcp-servers"
    assert (await dashboard.get(f"/settings/mcp-servers/{server.id}")).status_code == 404


async def test_another_organizations_server_is_not_found(
    dashboard: Dashboard, services: Services, other_tenant: Tenant
) -> None:
    async with services.db.transaction() as conn:
        body = McpServerCreate.model_validate({"name": "Theirs", "url": "https://8.8.8.8/"})
        theirs = await service.create_server(
            conn, other_tenant.org_id, body, now=services.clock.now(), policy=EgressPolicy(), box=None
        )
    assert (await dashboard.get(f"/settings/mcp-servers/{theirs.id}")).status_code == 404
    assert (await dashboard.post(f"/settings/mcp-servers/{theirs.id}/delete")).status_code == 404
    assert "Theirs" not in (await dashboard.get("/settings/mcp-servers")).text
