"""The migrations build exactly the schema the code declares, on both dialects."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from threadline.runtime import Services
from threadline.storage.tables import is_declared, metadata


async def test_migrated_schema_matches_the_tables(services: Services) -> None:
    def differences(conn: Connection) -> list[object]:
        options = {
            "include_object": lambda _o, name, type_, _r, _c: is_declared(name, type_),
            "compare_type": True,
        }
        return list(compare_metadata(MigrationContext.configure(conn, opts=options), metadata))

    assert await services.db.run_sync(differences) == []


async def test_search_objects_exist(services: Services) -> None:
    """The objects the drift check leaves out are the ones each dialect's search needs."""

    def names(conn: Connection) -> set[str]:
        inspector = sa.inspect(conn)
        found = set(inspector.get_table_names())
        for table in ("threads", "messages"):
            found |= {c["name"] for c in inspector.get_columns(table)}
        return found

    present = await services.db.run_sync(names)
    if services.db.is_sqlite:
        assert {"threads_fts", "messages_fts"} <= present
    else:
        assert "search_vector" in present
