"""The dashboard owner login: argon2id hashes only, and verification that does not leak which emails exist."""

from __future__ import annotations

import subprocess
import sys

import sqlalchemy as sa
from argon2 import Type, extract_parameters, profiles

from tests.support import Tenant
from threadline.runtime import Services
from threadline.users.service import PRODUCTION_HASHER, create_owner, generate_password, verify_login
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


def test_a_process_hashes_with_argon2id_and_rfc_9106s_low_memory_profile() -> None:
    """The tests' own process hashes cheaply (tests/conftest.py ``use_hasher``); every other process, a
    deployment's included, hashes with these parameters: 64 MiB, three passes, four lanes."""
    assert extract_parameters(PRODUCTION_HASHER.hash("x")) == profiles.RFC_9106_LOW_MEMORY
    assert profiles.RFC_9106_LOW_MEMORY.type is Type.ID
    fresh = "from threadline.users import service as s; print(s.use_hasher(s.PRODUCTION_HASHER).hash('x'))"
    made = subprocess.run(
        [sys.executable, "-c", fresh], capture_output=True, text=True, check=True, timeout=60
    )
    assert extract_parameters(made.stdout.strip()) == profiles.RFC_9106_LOW_MEMORY
