"""The storage facade: what every repository relies on, whatever the dialect."""

from __future__ import annotations

import sqlalchemy as sa

from threadline.runtime import Services


async def test_none_is_bound_as_sql_null(services: Services) -> None:
    """SQLite binds None through an adapter registered for speed (kit.db); it must stay SQL NULL, not a
    string or a zero, for parameters of every kind of statement."""
    async with services.db.transaction(write=False) as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT CAST(:value AS TEXT) IS NULL AS is_null, "
                    "COALESCE(CAST(:value AS TEXT), 'fallback') AS coalesced"
                ),
                {"value": None},
            )
        ).one()
    assert row.is_null in (True, 1)
    assert row.coalesced == "fallback"
