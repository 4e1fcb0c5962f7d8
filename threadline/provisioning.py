"""Creating tenants and changing their operator-set limits (CLI only: no API caller can do either)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from threadline.access.principal import ORG_UPDATED
from threadline.keys.repository import ApiKey
from threadline.keys.service import create_key
from threadline.kit.db import Conn, after_commit
from threadline.kit.errors import NotFound
from threadline.kit.signals import SignalBus
from threadline.organizations.repository import Organization, OrganizationRepository
from threadline.projects.repository import Project
from threadline.projects.service import create_project


@dataclass(frozen=True, slots=True)
class NewOrganization:
    organization: Organization
    project: Project
    secret_key: ApiKey
    secret_value: str
    public_key: ApiKey
    public_value: str


async def create_organization(conn: Conn, name: str, *, now: datetime) -> NewOrganization:
    """An organization ready to use: its ``default`` project and one key of each type."""
    org = await OrganizationRepository(conn).insert(name, now)
    project = await create_project(conn, org.id, "default", now=now)
    secret, secret_value = await create_key(
        conn, org.id, name="default secret key", key_type="secret", now=now
    )
    public, public_value = await create_key(
        conn, org.id, name="default public key", key_type="public", project_id=project.id, now=now
    )
    return NewOrganization(org, project, secret, secret_value, public, public_value)


async def set_rate_limit(
    conn: Conn, signals: SignalBus, organization_id: str, per_minute: int, *, now: datetime
) -> Organization:
    return await _set_limits(conn, signals, organization_id, {"rate_limit_per_minute": per_minute}, now)


async def set_run_concurrency(
    conn: Conn, signals: SignalBus, organization_id: str, concurrent_runs: int, *, now: datetime
) -> Organization:
    """Executors read it from the row at each claim, so the next claim anywhere applies it."""
    return await _set_limits(conn, signals, organization_id, {"run_concurrency": concurrent_runs}, now)


async def set_stream_limit(
    conn: Conn, signals: SignalBus, organization_id: str, streams: int, *, now: datetime
) -> Organization:
    """Streams open at once per process; a stream already open over a lowered limit runs to its end."""
    return await _set_limits(conn, signals, organization_id, {"stream_limit": streams}, now)


async def set_automation_limit(
    conn: Conn, signals: SignalBus, organization_id: str, automations: int, *, now: datetime
) -> Organization:
    """Checked when an automation is created: lowering it below what an organization holds deletes
    nothing, but it creates no more until it is under the limit again."""
    return await _set_limits(conn, signals, organization_id, {"automation_limit": automations}, now)


async def set_queued_run_limit(
    conn: Conn, signals: SignalBus, organization_id: str, queued_runs: int, *, now: datetime
) -> Organization:
    return await _set_limits(conn, signals, organization_id, {"queued_run_limit": queued_runs}, now)


async def _set_limits(
    conn: Conn, signals: SignalBus, organization_id: str, values: dict[str, object], now: datetime
) -> Organization:
    """Servers cache an organization's limits with its keys; the signal makes every process re-read them."""
    if not await OrganizationRepository(conn).update(organization_id, values, now):
        raise NotFound(f"Organization {organization_id} was not found.")

    async def announce() -> None:
        await signals.publish(ORG_UPDATED, organization_id)

    after_commit(conn, announce)
    org = await OrganizationRepository(conn).get(organization_id)
    assert org is not None
    return org
