"""Settings live on the organization row; NULL means the documented default, resolved here only.

A change is announced after commit (``org.updated``), which drops every process's cached principal for the
organization, so the next request anywhere sees the new values."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic.alias_generators import to_camel

from threadline.access.caller import DEFAULT_ALLOWED_ORIGINS as DEFAULT_ALLOWED_ORIGINS
from threadline.access.principal import ORG_UPDATED
from threadline.config import Settings
from threadline.kit.db import Conn, after_commit
from threadline.kit.errors import BadRequest, NotFound, Reason
from threadline.kit.signals import SignalBus
from threadline.organizations.repository import Organization, OrganizationRepository
from threadline.organizations.schemas import RateLimitOut
from threadline.settings.schemas import SettingsOut

DEFAULT_MODEL = "offline/scripted"
DEFAULT_LOG_RETENTION_DAYS = 30
_READ_ONLY = ("rate_limit", "run_concurrency")
_NOT_NULL = ("default_model", "log_retention_days", "allowed_origins", "billing_enforced")


def effective(org: Organization, config: Settings) -> SettingsOut:
    return SettingsOut(
        default_model=org.default_model or DEFAULT_MODEL,
        instructions=org.instructions,
        log_retention_days=org.log_retention_days or DEFAULT_LOG_RETENTION_DAYS,
        allowed_origins=list(org.allowed_origins or DEFAULT_ALLOWED_ORIGINS),
        billing_enforced=org.billing_enforced,
        rate_limit=RateLimitOut(requests_per_minute=org.limits(config).requests_per_minute),
        run_concurrency=org.limits(config).concurrent_runs,
    )


async def get_settings(conn: Conn, config: Settings, organization_id: str) -> SettingsOut:
    org = await OrganizationRepository(conn).get(organization_id)
    if org is None:  # pragma: no cover - the caller's own organization
        raise NotFound("Organization not found.")
    return effective(org, config)


async def update_settings(
    conn: Conn,
    config: Settings,
    signals: SignalBus,
    organization_id: str,
    changes: Mapping[str, Any],
    now: datetime,
) -> SettingsOut:
    """``changes`` holds only the fields the client sent."""
    for name in _READ_ONLY:
        if name in changes:
            raise BadRequest(
                f"{to_camel(name)} is read-only; an operator changes it with `threadline orgs set-limit`.",
                reason=Reason.READ_ONLY_FIELD,
            )
    for name in _NOT_NULL:
        if name in changes and changes[name] is None:
            raise BadRequest(f"{to_camel(name)} cannot be null.", reason=Reason.VALIDATION_FAILED)
    if changes:
        await OrganizationRepository(conn).update(organization_id, dict(changes), now)

        async def announce() -> None:
            await signals.publish(ORG_UPDATED, organization_id)

        after_commit(conn, announce)
    return await get_settings(conn, config, organization_id)
