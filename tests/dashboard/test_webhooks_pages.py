"""Settings > Webhooks over ASGI: refusals at their fields, the secret on the create's answer only, and
another organization's endpoint as the 404 page (the journey against a real receiver is
tests/dashboard/browser/test_webhooks_journey.py)."""

from __future__ import annotations

import re

from tests.dashboard.support import Dashboard
from tests.support import Tenant
from threadline.kit.egress import EgressPolicy
from threadline.runtime import Services
from threadline.webhooks import service
from threadline.webhooks.schemas import WebhookCreate


async def test_problems_at_their_fields(dashboard: Dashboard) -> None:
    for fields, field, message in [
        ({"url": "https://8.8.8.8/hooks"}, "webhook-events", "at least 1 item"),
        ({"url": "ftp://8.8.8.8/", "events": "*"}, "webhook-url", "http:// or https://"),
        ({"url": "http://10.0.0.1/", "events": "*"}, "webhook-url", "not public"),
    ]:
        response = await dashboard.post("/settings/webhooks", fields)
        assert response.status_code == 400, response.text[:2000]
        error = re.search(rf'id="{field}-error">([^<]*)<', response.text)
        assert error is not None and message in error.group(1), (fields, response.text[:3000])
        assert "whsec_" not in response.text


async def test_the_secret_is_on_the_creates_answer_only(dashboard: Dashboard, services: Services) -> None:
    posted = await dashboard.post(
        "/settings/webhooks", {"url": "https://8.8.8.8/hooks", "events": "run.failed"}
    )
    if services.secret_box is None:  # the distributed shape of these tests sets no key: nothing to seal with
        assert posted.status_code == 400 and "THREADLINE_ENCRYPTION_KEY" in posted.text
        return
    assert posted.status_code == 201
    secret = re.search(r'id="webhook-secret"[^>]*>(whsec_[^<]+)<', posted.text)
    assert secret is not None
    assert secret.group(1) not in (await dashboard.get("/settings/webhooks")).text


async def test_another_organizations_endpoint_is_not_found(
    dashboard: Dashboard, services: Services, other_tenant: Tenant
) -> None:
    from threadline.kit.encryption import SecretBox, generate_key

    box = SecretBox.from_setting(generate_key())
    async with services.db.transaction() as conn:
        body = WebhookCreate.model_validate({"url": "https://8.8.8.8/theirs", "events": ["*"]})
        theirs, _ = await service.create_webhook(
            conn, other_tenant.org_id, body, now=services.clock.now(), policy=EgressPolicy(), box=box
        )
    base = f"/settings/webhooks/{theirs.id}"
    assert (await dashboard.get(base)).status_code == 404
    for action in ("/test", "/delete"):
        assert (await dashboard.post(base + action)).status_code == 404
    assert "theirs" not in (await dashboard.get("/settings/webhooks")).text
