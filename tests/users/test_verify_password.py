"""The password asked again of a signed-in person (before a secret key is made or revoked): checked by
user id within the organization, so another organization's id never verifies."""

from __future__ import annotations

from tests.support import Tenant
from threadline.runtime import Services
from threadline.users.service import create_owner, verify_password


async def test_checks_the_users_own_password_in_its_organization(
    tenant: Tenant, other_tenant: Tenant, services: Services
) -> None:
    async with services.db.transaction() as conn:
        user = await create_owner(
            conn, tenant.org_id, f"again-{tenant.org_id}@example.com", "s3cret pass", now=services.clock.now()
        )
    async with services.db.transaction(write=False) as conn:
        assert await verify_password(conn, tenant.org_id, user.id, "s3cret pass") is True
        assert await verify_password(conn, tenant.org_id, user.id, "s3cret pass ") is False
        assert await verify_password(conn, tenant.org_id, user.id, "") is False
        assert await verify_password(conn, other_tenant.org_id, user.id, "s3cret pass") is False
        assert await verify_password(conn, tenant.org_id, "usr_nobody", "s3cret pass") is False
