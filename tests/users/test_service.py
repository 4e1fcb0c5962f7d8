"""The dashboard owner login: argon2id hashes only, and verification that does not leak which emails exist."""

from __future__ import annotations

import sqlalchemy as sa

from tests.support import Tenant
from threadline.runtime import Services
from threadline.users.service import create_owner, generate_password, verify_login
from threadline.users.tables import users


async def test_password_is_stored_as_argon2id_and_verifies(tenant: Tenant, services: Services) -> None:
    password = generate_password()
    email = f"Owner-{tenant.org_id}@Example.com"
    async with services.db.transaction() as conn:
        user = await create_owner(conn, tenant.org_id, email, password, now=services.clock.now())
        row = (await conn.execute(sa.select(users).where(users.c.id == user.id))).mappings().one()
    assert row["password_hash"].startswith("$argon2id$")
    assert password not in row["password_hash"]
    async with services.db.transaction(write=False) as conn:
        assert (await verify_login(conn, email.lower(), password)) == user
        assert await verify_login(conn, email, password + "x") is None
        assert await verify_login(conn, "nobody@example.com", password) is None
