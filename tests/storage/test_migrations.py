"""The migrations build exactly the schema the code declares, on both dialects."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from threadline.runtime import Services
from threadline.storage.tables import metadata


async def test_migrated_schema_matches_the_tables(services: Services) -> None:
    def differences(conn: Connection) -> list[object]:
        return list(compare_metadata(MigrationContext.configure(conn), metadata))

    async with services.db.engine.connect() as conn:
        assert await conn.run_sync(differences) == []
